/**
 * Why an edge upload failed, in words an operator acts on. Credentials are the failure an
 * edge box meets that a retry alone does not explain: short-lived credentials
 * (`credential_process`, IAM Roles Anywhere, SSO) that could not be renewed, or that S3
 * refused (expired, revoked, a policy that does not cover the key). They are retried
 * with backoff like any other failure (the segments wait in the bounded spool), but the
 * message says what to check.
 */

export type UploadFailureKind = 'credentials' | 'refused' | 'unreachable' | 'other';

/** Error names of the SDK's credential providers and of STS/S3 for credentials that cannot sign, or signed and were refused. */
const CREDENTIAL_ERRORS = new Set([
  'CredentialsProviderError',
  'ProviderError',
  'TokenProviderError',
  'ExpiredToken',
  'ExpiredTokenException',
  'TokenRefreshRequired',
  'InvalidAccessKeyId',
  'InvalidClientTokenId',
  'InvalidToken',
  'SignatureDoesNotMatch',
  'UnrecognizedClientException',
]);

const UNREACHABLE = /ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|socket hang up|TimeoutError|RequestTimeout/i;

export function classifyUploadError(e: unknown): UploadFailureKind {
  const err = e as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const name = err?.name ?? '';
  if (CREDENTIAL_ERRORS.has(name)) return 'credentials';
  if (name === 'AccessDenied' || err?.$metadata?.httpStatusCode === 403) return 'refused';
  if (UNREACHABLE.test(`${name} ${err?.code ?? ''} ${err?.message ?? ''}`)) return 'unreachable';
  return 'other';
}

/**
 * What to check, per kind (appended to the failure's own message). The SDK's chain reports a
 * failing `credential_process` only as "Could not load credentials from any providers", so the
 * hint names the command that shows the process's own error.
 */
export function uploadFailureHint(kind: UploadFailureKind, profile?: string): string {
  switch (kind) {
    case 'credentials':
      return (
        `the AWS credentials could not be obtained or have expired: check the credential_process${profile ? ` of profile ${profile}` : ' (or profile)'} the edge uses, its certificate and clock ` +
        `(\`aws configure export-credentials${profile ? ` --profile ${profile}` : ''}\` on this box shows its own error); retrying`
      );
    case 'refused':
      return "S3 refused the request: the credentials' policy must allow s3:PutObject on this camera's frames/<video>/ prefix (docs/deploy.md); retrying";
    case 'unreachable':
      return 'S3 cannot be reached (network or endpoint); retrying';
    case 'other':
      return 'retrying';
  }
}
