#!/usr/bin/env node
/**
 * `affinity` — the operator CLI (`npx affinity …`, or `npx node cli/bin.ts …`).
 * Everything lives in main.ts so tests can run it in-process.
 */
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2));
