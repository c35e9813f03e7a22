/**
 * The credential provider of the Lambda bundles: the execution role's keys
 * that the Lambda runtime puts in the environment (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), and nothing else.
 *
 * Every AWS SDK client imports `defaultProvider` from
 * `@aws-sdk/credential-provider-node`, the whole chain (profiles, SSO, STS,
 * web identity, process, container and instance metadata): about 110 KiB of
 * minified code per bundle (the nested SSO/STS/Signin clients, the query
 * protocol) that a Lambda never runs, since the environment comes first in
 * that chain and is always set there. lib/bundling.ts aliases that package to
 * this module in the Lambda bundles only; the local bridge, the CLI and tests
 * run from source with the SDK's own chain.
 */

/** What an SDK credential provider resolves to. */
export interface EnvironmentCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/**
 * Same signature as `@aws-sdk/credential-provider-node`'s `defaultProvider`
 * (the SDK passes the client's logger in `init`). Read on each call: the SDK
 * caches the identity and asks again only when it expires.
 */
export const defaultProvider =
  (_init: object = {}) =>
  async (): Promise<EnvironmentCredentials> => {
    const env = process.env;
    const accessKeyId = env.AWS_ACCESS_KEY_ID;
    const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
    if (!accessKeyId || !secretAccessKey) {
      // No key material in the message: only which variables are missing.
      throw new Error('No AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (the Lambda runtime sets them from the execution role)');
    }
    return {
      accessKeyId,
      secretAccessKey,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
      ...(env.AWS_CREDENTIAL_EXPIRATION ? { expiration: new Date(env.AWS_CREDENTIAL_EXPIRATION) } : {}),
    };
  };

/** Exported by the package this module stands in for. */
export const credentialsWillNeedRefresh = (credentials?: { expiration?: Date }): boolean => credentials?.expiration !== undefined;
export const credentialsTreatedAsExpired = (credentials?: { expiration?: Date }): boolean =>
  credentials?.expiration !== undefined && credentials.expiration.getTime() - Date.now() < 300_000;
