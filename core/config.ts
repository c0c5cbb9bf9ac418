/**
 * The single source of truth for tunables, defaults and resource names, one topic per
 * file under core/config/:
 *
 * - tunables.ts: the runtime tunables, declared once in a table (default, range, unit,
 *   meaning) from which their type, defaults, checks, environment names and the
 *   README's table derive; settings.ts is the table machinery (shared with the
 *   deployment settings of infra/config.ts);
 * - resource-names.ts: physical names from one prefix; s3-layout.ts: the frame keys;
 * - wiring.ts: where the resources are, as the components read it from the environment;
 * - worker-env.ts: the worker's own environment and exit codes;
 * - aws-call-policy.ts: timeouts and retries of every AWS call.
 *
 * The CDK stack, the router and janitor Lambdas, the GPU worker and the local stack all
 * read these values; nothing else in the repository hard-codes a TTL, a capacity or a
 * resource name. Import from here (core/config.ts), not from the files.
 */
export * from './config/settings.ts';
export * from './config/tunables.ts';
export * from './config/resource-names.ts';
export * from './config/s3-layout.ts';
export * from './config/wiring.ts';
export * from './config/worker-env.ts';
export * from './config/aws-call-policy.ts';
