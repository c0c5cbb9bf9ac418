/**
 * An onnxruntime session on its own thread. onnxruntime-node runs `session.run`
 * synchronously on the calling thread (1.30: inside a setImmediate), so on the main
 * thread every inference freezes the event loop: S3 GETs, the commit in flight, the
 * heartbeat and every decode step wait until it returns. Here the session lives in a
 * worker thread; the main thread sends the input tensor (its buffer transferred, not
 * copied) and gets the outputs back the same way, and its event loop keeps fetching,
 * decoding and committing while the model runs (decision 20).
 *
 * This module is also the thread's entry point: loaded with `workerData.role ===
 * 'inference-thread'`, it creates the session and serves runs.
 */
import { isMainThread, parentPort, Worker, workerData, type ResourceLimits } from 'node:worker_threads';
import ort from 'onnxruntime-node';

/** The part of an onnxruntime session the model loader and the processor use. */
export type InferenceSessionLike = Pick<ort.InferenceSession, 'inputNames' | 'outputNames' | 'inputMetadata' | 'outputMetadata' | 'run' | 'release'> & {
  /**
   * Settles once, when the thread serving the session dies on its own (not when it is
   * released): from then on every run rejects with {@link InferenceThreadDiedError}.
   * Absent for a session that cannot die apart from its process (one on the main thread).
   */
  readonly died?: Promise<InferenceThreadDeath>;
  /**
   * `run`, and the input buffers back: a feed whose buffer was moved to the thread comes
   * back moved again once the run is over (`inputs`, by input name), so the caller can
   * reuse it (decision 37). Absent where feeds are never moved (a session on the main thread).
   */
  readonly runReturningInputs?: (feeds: ort.InferenceSession.FeedsType) => Promise<RunWithInputs>;
};

/** What {@link InferenceSessionLike.runReturningInputs} resolves to. */
export interface RunWithInputs {
  readonly outputs: ort.InferenceSession.ReturnType;
  /** The buffers of the feeds that were moved to the thread, moved back, by input name. */
  readonly inputs: Readonly<Record<string, ArrayBuffer>>;
}

/** Why an inference thread ended: the dimension `Reason` of `InferenceThreadDied`. */
export type InferenceThreadDeathReason =
  /** V8 ran out of heap in the thread (`ERR_WORKER_OUT_OF_MEMORY`). */
  | 'out-of-memory'
  /** An exception nothing caught, or any other error the thread raised. */
  | 'thread-error'
  /** The thread exited without an error (e.g. `process.exit` inside it, or a native abort surfaced as an exit). */
  | 'thread-exit';

/** How an inference thread died. */
export interface InferenceThreadDeath {
  readonly reason: InferenceThreadDeathReason;
  /** The error message, or the exit code. */
  readonly detail: string;
}

/** The rejection of every run in flight on, or sent to, a thread that died. */
export class InferenceThreadDiedError extends Error {
  override name = 'InferenceThreadDiedError';
  readonly death: InferenceThreadDeath;

  constructor(death: InferenceThreadDeath) {
    super(`inference thread died (${death.reason}): ${death.detail}`);
    this.death = death;
  }
}

/**
 * Test seam: makes the thread die for real on its `onRun`-th run request (the warm-up
 * run of `loadModel` is the first): `exit` calls `process.exit(57)` in the thread, `throw`
 * raises an exception nothing catches, `oom` allocates until V8 gives up
 * (`ERR_WORKER_OUT_OF_MEMORY`; pair it with small {@link ThreadOptions.resourceLimits}).
 */
export interface InferenceThreadFault {
  readonly kind: 'exit' | 'throw' | 'oom';
  readonly onRun: number;
}

/** How the thread itself is created. */
export interface ThreadOptions {
  /** V8 heap limits of the thread (Node's defaults otherwise). onnxruntime's own memory is native and not counted. */
  readonly resourceLimits?: ResourceLimits;
  /** Test seam only; see {@link InferenceThreadFault}. */
  readonly fault?: InferenceThreadFault;
}

/** Exit code of a thread made to exit by an `exit` {@link InferenceThreadFault}. */
export const FAULT_EXIT_CODE = 57;

/** Classifies a thread's `error` event. */
export function deathFromError(error: unknown): InferenceThreadDeath {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return { reason: code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'out-of-memory' : 'thread-error', detail: message.slice(0, 300) };
}

interface WireTensor {
  readonly type: ort.Tensor.Type;
  readonly data: ort.Tensor.DataType;
  readonly dims: readonly number[];
}

type Request = { readonly id: number; readonly op: 'run'; readonly feeds: Record<string, WireTensor> } | { readonly id: number; readonly op: 'release' };

type Reply =
  | { readonly id: number; readonly ok: true; readonly outputs?: Record<string, WireTensor>; readonly inputs?: Record<string, ArrayBuffer> }
  | { readonly id: number; readonly ok: false; readonly error: string; readonly inputs?: Record<string, ArrayBuffer> };

type Ready =
  | {
      readonly ready: true;
      readonly inputNames: readonly string[];
      readonly outputNames: readonly string[];
      readonly inputMetadata: readonly ort.InferenceSession.ValueMetadata[];
      readonly outputMetadata: readonly ort.InferenceSession.ValueMetadata[];
    }
  | { readonly ready: false; readonly error: string };

const ROLE = 'inference-thread';

/** A buffer that can be handed over whole: not a view into a larger (pooled) one. */
function ownsBuffer(data: ArrayBufferView): boolean {
  return data.buffer instanceof ArrayBuffer && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
}

/** Named tensors as they cross the thread boundary, and the buffers that can move rather than be copied. */
function toWire(tensors: Readonly<Record<string, ort.Tensor>>): { wire: Record<string, WireTensor>; transfer: ArrayBuffer[] } {
  const wire: Record<string, WireTensor> = {};
  const transfer: ArrayBuffer[] = [];
  for (const [name, tensor] of Object.entries(tensors)) {
    const data = tensor.data as ArrayBufferView & ort.Tensor.DataType;
    wire[name] = { type: tensor.type, data, dims: tensor.dims };
    if (typeof data === 'object' && ArrayBuffer.isView(data) && ownsBuffer(data)) transfer.push(data.buffer as ArrayBuffer);
  }
  return { wire, transfer };
}

/** The feeds' buffers that came over moved (whole, not views into a larger one), to move back after the run. */
function movedInputs(wire: Readonly<Record<string, WireTensor>>): { inputs: Record<string, ArrayBuffer>; transfer: ArrayBuffer[] } {
  const inputs: Record<string, ArrayBuffer> = {};
  const transfer = new Set<ArrayBuffer>();
  for (const [name, t] of Object.entries(wire)) {
    const data = t.data as unknown;
    if (typeof data !== 'object' || !ArrayBuffer.isView(data) || !ownsBuffer(data) || transfer.has(data.buffer as ArrayBuffer)) continue;
    inputs[name] = data.buffer as ArrayBuffer;
    transfer.add(data.buffer as ArrayBuffer);
  }
  return { inputs, transfer: [...transfer] };
}

function fromWire(wire: Readonly<Record<string, WireTensor>>): Record<string, ort.Tensor> {
  const tensors: Record<string, ort.Tensor> = {};
  for (const [name, t] of Object.entries(wire)) tensors[name] = new ort.Tensor(t.type, t.data as never, t.dims);
  return tensors;
}

/**
 * Creates a session with `providers` in a new worker thread. Rejects (and ends the
 * thread) when onnxruntime cannot create it, e.g. CUDA asked for where it cannot load.
 */
export async function createThreadedSession(
  bytes: Uint8Array,
  providers: string[],
  sessionOptions: ort.InferenceSession.SessionOptions = {},
  threadOptions: ThreadOptions = {},
): Promise<InferenceSessionLike> {
  const copy = new Uint8Array(bytes);
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { role: ROLE, bytes: copy, providers, sessionOptions, fault: threadOptions.fault },
    transferList: [copy.buffer],
    ...(threadOptions.resourceLimits ? { resourceLimits: threadOptions.resourceLimits } : {}),
  });
  const ready = await new Promise<Ready>((resolve, reject) => {
    worker.once('message', (m: Ready) => resolve(m));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`inference thread exited with code ${code} before its session was ready`)));
  }).finally(() => {
    worker.removeAllListeners('error');
    worker.removeAllListeners('exit');
  });
  if (!ready.ready) {
    await worker.terminate();
    throw new Error(ready.error);
  }
  return new ThreadedSession(worker, ready);
}

class ThreadedSession implements InferenceSessionLike {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly ort.InferenceSession.ValueMetadata[];
  readonly died: Promise<InferenceThreadDeath>;
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  /** Why the thread can no longer serve runs, once it cannot. */
  private failure: Error | undefined;

  constructor(worker: Worker, ready: Extract<Ready, { ready: true }>) {
    this.worker = worker;
    this.inputNames = ready.inputNames;
    this.outputNames = ready.outputNames;
    this.inputMetadata = ready.inputMetadata;
    this.outputMetadata = ready.outputMetadata;
    let announce: (death: InferenceThreadDeath) => void = () => undefined;
    this.died = new Promise((resolve) => (announce = resolve));
    worker.on('message', (reply: Reply) => {
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      waiter?.resolve(reply);
    });
    // The first of 'error' (an OOM or an uncaught exception; 'exit' follows it) and 'exit'
    // says why. After release() the failure is already set, so a released thread is no death.
    const die = (death: InferenceThreadDeath) => {
      if (this.failure) return;
      this.failure = new InferenceThreadDiedError(death);
      for (const w of this.pending.values()) w.reject(this.failure);
      this.pending.clear();
      announce(death);
    };
    worker.on('error', (error) => die(deathFromError(error)));
    worker.on('exit', (code) => die({ reason: 'thread-exit', detail: `exit code ${code}` }));
    // An idle thread does not keep the process alive; a run in flight does.
    worker.unref();
  }

  async run(feeds: ort.InferenceSession.FeedsType): Promise<ort.InferenceSession.ReturnType> {
    return (await this.runReturningInputs(feeds)).outputs;
  }

  async runReturningInputs(feeds: ort.InferenceSession.FeedsType): Promise<RunWithInputs> {
    const { wire, transfer } = toWire(feeds);
    const reply = await this.request({ id: this.nextId++, op: 'run', feeds: wire }, transfer);
    if (!reply.ok) throw new Error(reply.error);
    return { outputs: fromWire(reply.outputs ?? {}), inputs: reply.inputs ?? {} };
  }

  async release(): Promise<void> {
    if (!this.failure) {
      try {
        await this.request({ id: this.nextId++, op: 'release' }, []);
      } catch {
        // The thread is gone already; nothing left to release.
      }
    }
    this.failure ??= new Error('inference session released');
    for (const w of this.pending.values()) w.reject(this.failure);
    this.pending.clear();
    await this.worker.terminate();
  }

  private request(request: Request, transfer: ArrayBuffer[]): Promise<Reply> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(request.id, { resolve, reject });
      this.worker.ref();
      this.worker.postMessage(request, transfer);
    });
  }
}

/** Carries out a test fault in the thread (see {@link InferenceThreadFault}). */
function commitFault(kind: InferenceThreadFault['kind']): void {
  if (kind === 'exit') process.exit(FAULT_EXIT_CODE);
  if (kind === 'throw') {
    // Thrown outside the message handler's try, so nothing catches it.
    setImmediate(() => {
      throw new Error('inference thread fault: uncaught exception');
    });
    return;
  }
  const hoard: number[][] = [];
  for (;;) hoard.push(Array.from({ length: 1 << 16 }, (_, i) => i + hoard.length));
}

/** The thread's side: create the session, then serve runs one message at a time. */
async function serve(): Promise<void> {
  const port = parentPort!;
  const { bytes, providers, sessionOptions, fault } = workerData as {
    bytes: Uint8Array;
    providers: string[];
    sessionOptions: ort.InferenceSession.SessionOptions;
    fault?: InferenceThreadFault;
  };
  let runs = 0;
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(bytes, { ...sessionOptions, executionProviders: providers });
  } catch (error) {
    port.postMessage({ ready: false, error: error instanceof Error ? error.message : String(error) } satisfies Ready);
    return;
  }
  port.postMessage({
    ready: true,
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    inputMetadata: session.inputMetadata,
    outputMetadata: session.outputMetadata,
  } satisfies Ready);
  port.on('message', async (request: Request) => {
    if (request.op === 'run' && fault && ++runs === fault.onRun) {
      commitFault(fault.kind);
      return;
    }
    try {
      if (request.op === 'release') {
        await session.release();
        port.postMessage({ id: request.id, ok: true } satisfies Reply);
        return;
      }
      const { wire, transfer } = toWire(await session.run(fromWire(request.feeds)));
      // onnxruntime is done with the inputs once run returns (it read them in place, or
      // copied them to the device): they go back for reuse rather than to this thread's GC.
      const moved = movedInputs(request.feeds);
      port.postMessage({ id: request.id, ok: true, outputs: wire, inputs: moved.inputs } satisfies Reply, [...transfer, ...moved.transfer]);
    } catch (error) {
      port.postMessage({ id: request.id, ok: false, error: error instanceof Error ? error.message : String(error) } satisfies Reply);
    }
  });
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE) void serve();
