/**
 * The credential provider of the Lambda bundles: the execution role's keys
 * that the Lambda runtime puts in the environment (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), read by the SDK's own
 * `@aws-sdk/credential-provider-env`, and nothing else.
 *
 * Every AWS SDK client imports `defaultProvider` from
 * `@aws-sdk/credential-provider-node`, the whole chain (profiles, SSO, STS,
 * web identity, process, container and instance metadata): about 110 KiB of
 * minified code per bundle (the nested SSO/STS/Signin clients, the query
 * protocol) that a Lambda never runs, since the environment comes first in
 * that chain and is always set there. lib/private/bundling.ts aliases that package to
 * this module in the Lambda bundles only; the local bridge, the CLI and tests
 * run from source with the SDK's own chain.
 */

import { fromEnv } from '@aws-sdk/credential-provider-env';

/**
 * Same signature as `@aws-sdk/credential-provider-node`'s `defaultProvider`
 * (the SDK passes the client's logger in `init`): the SDK's own environment
 * provider, whose refusal names what the Lambda runtime should have set.
 * The SDK caches the identity and asks again only when it expires.
 */
export const defaultProvider = (init: Parameters<typeof fromEnv>[0] = {}) => {
  const provider = fromEnv(init);
  return async () => {
    try {
      return await provider();
    } catch (error) {
      // No key material in the message: only which variables are missing.
      throw new Error('No AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (the Lambda runtime sets them from the execution role)', {
        cause: error,
      });
    }
  };
};

/** Exported by the package this module stands in for (same rule as there). */
export const credentialsWillNeedRefresh = (credentials?: { expiration?: Date }): boolean => credentials?.expiration !== undefined;
export const credentialsTreatedAsExpired = (credentials?: { expiration?: Date }): boolean =>
  credentials?.expiration !== undefined && credentials.expiration.getTime() - Date.now() < 300_000;
