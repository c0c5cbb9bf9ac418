/**
 * What the operator operations (`replay`, `reconcile`, `release`: core/commit/operations/)
 * are given: ports only, so the CLI runs them on AWS or the local stack and a simulation
 * runs them on the in-memory twins ({@link operatorPorts} builds them from SDK-shaped
 * clients, the twins' included). The operations decide and act; they print nothing: the
 * CLI turns their results and refusals into lines.
 */
import type { ResultsAdmin } from '../port.ts';
import type { UploadResender, VideoObjects } from '../../ingest/port.ts';
import type { VideoOverrides } from '../../leases/port.ts';

export interface OperatorPorts {
  readonly leases: VideoOverrides;
  readonly results: ResultsAdmin;
  readonly objects: VideoObjects;
  readonly ingest: UploadResender;
  /** Epoch ms. */
  readonly now: () => number;
  /** A fresh replay tag starting with `prefix` (the simulation makes them deterministic). */
  readonly newTag: (prefix: string) => string;
  /** Where the resources are, for messages (`local stack (.local/stack.json)`). */
  readonly where: string;
  /** The bucket's name, for messages. */
  readonly bucket: string;
}

/**
 * An operation refused or stopped, with a message that says what to do; nothing it
 * reports as unchanged was changed. `usage`: the request itself is wrong (exit code 2 in
 * the CLI).
 */
export class OperatorError extends Error {
  override name = 'OperatorError';
  readonly usage: boolean;
  constructor(message: string, options: { usage?: boolean } = {}) {
    super(message);
    this.usage = options.usage ?? false;
  }
}
