/** How errors are written into logs, failure records and messages. */

/** `Name: message` of an Error, or the thrown value as a string. */
export function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
