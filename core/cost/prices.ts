/**
 * us-east-1 list prices, USD, in one place (issue 44): the cost bench
 * (bench/cost-model.ts) and the operator's estimate (`affinity status`, estimate.ts) read
 * these. Sources are cited in docs/deploy.md §8; check the pricing pages before relying
 * on them (prices change, regions differ, free tiers are not counted).
 */
export const PRICES = {
  s3PutPerMillion: 5, // PUT, COPY, POST, LIST: $0.005 per 1,000
  s3GetPerMillion: 0.4, // GET and HEAD (and all other requests): $0.0004 per 1,000
  s3ListPerMillion: 5, // LIST is priced as PUT
  s3StoragePerGbMonth: 0.023, // S3 Standard, first 50 TB
  sqsFifoPerMillion: 0.5, // per 64 KB chunk of a request (our messages are < 2 KB: 1 chunk)
  sqsStandardPerMillion: 0.4,
  ddbWriteUnitPerMillion: 0.625, // on-demand WRU (1 KB; transactional writes 2 per KB)
  ddbReadUnitPerMillion: 0.125, // on-demand RRU (4 KB strongly consistent; transactional 2)
  ddbProvisionedWcuHour: 0.00065, // provisioned capacity, per WCU-hour (`provisionedCapacityUnits`)
  ddbProvisionedRcuHour: 0.00013, // provisioned capacity, per RCU-hour
  ddbStoragePerGbMonth: 0.25, // Standard table class, beyond the free 25 GB
  ddbPitrPerGbMonth: 0.2, // continuous backups (point-in-time recovery), per GB of table size
  ddbStreamReadsPer100k: 0.02, // each GetRecords is one streams read request unit (Lambda triggers' are free; Pipes' are not)
  ddbStreamReadsFreePerMonth: 2_500_000,
  lambdaRequestPerMillion: 0.2,
  lambdaGbSecond: 0.0000133334, // arm64
  logsIngestPerGb: 0.5,
  eventBridgePerMillionEvents: 1, // custom events put on a bus (the pipe's target)
  pipesPerMillionRequests: 0.4, // EventBridge Pipes, per event after filtering (64 KB chunks)
  interfaceEndpointPerAzHour: 0.01,
  interfaceEndpointPerGb: 0.01,
  natGatewayPerHour: 0.045,
  natGatewayPerGb: 0.045,
  // Public IPv4 addresses, in use or idle, Elastic IPs (a NAT gateway's) included: $0.005 per IP-hour
  // (aws.amazon.com/vpc/pricing, "Public IPv4 address", since February 2024).
  publicIpv4PerHour: 0.005,
  // EC2 On-Demand, Linux, us-east-1 (aws.amazon.com/ec2/pricing/on-demand): the NAT instance types
  // `natInstanceType` accepts that are priced here; the cost bench refuses a type missing from this list.
  ec2InstanceHour: {
    't4g.nano': 0.0042, 't4g.micro': 0.0084, 't4g.small': 0.0168, 't4g.medium': 0.0336,
    't3.nano': 0.0052, 't3.micro': 0.0104, 't3.small': 0.0208,
    't3a.nano': 0.0047, 't3a.micro': 0.0094, 't3a.small': 0.0188,
  } as Readonly<Record<string, number>>,
  ebsGp3PerGbMonth: 0.08, // gp3 storage (aws.amazon.com/ebs/pricing); 3,000 IOPS and 125 MB/s included
  cloudWatchAlarmPerMonth: 0.1, // standard resolution, per metric the alarm evaluates
  cloudWatchDashboardPerMonth: 3, // beyond an account's first three
  customMetricPerMonth: 0.3, // per metric (name + dimensions), first 10,000; prorated by the hour it is emitted
  kmsKeyPerMonth: 1,
  ecrStoragePerGbMonth: 0.1,
  gpuInstanceHour: { 'g5.xlarge': 1.006, 'g6.xlarge': 0.8048 } as Readonly<Record<string, number>>,
} as const;

/** Hours AWS bills a month by (365 × 24 / 12). */
export const HOURS_PER_MONTH = 730;
export const SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600;
