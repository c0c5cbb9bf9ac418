/**
 * A crash probe child that hangs on every frame (test/gpu-worker/runtime/crash/probe-process.int.test.ts):
 * it says ready, then never answers, as a decoder or model stuck on a frame would.
 */
process.on('disconnect', () => process.exit(0));
process.on('message', () => {});
process.send?.({ type: 'ready', description: 'hangs on every frame' });
