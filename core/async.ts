/** Small promise helpers with no dependencies, shared by the worker, the Lambdas, the local stack and the CLI. */

/** Resolves after `ms` milliseconds (a timer, so it keeps the process alive meanwhile). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
