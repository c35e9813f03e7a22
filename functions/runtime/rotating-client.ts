/**
 * A Mapflow client that survives a token rotation. The token is cached (five
 * minutes on AWS), so after an operator puts a new token into the secret,
 * running jobs still send the old one and get 401. On a 401 this re-reads the
 * secret once; when it holds another token, the call is made again with it.
 * A 401 means the request was refused, so repeating even a create is safe.
 */
// Not the barrel: that would pull the HTTP client (undici) into bundles that only wrap one.
import { MapflowAuthError } from '../mapflow/errors.ts';
import type { MapflowClient } from '../mapflow/client.ts';

type ClientSource = (options?: { refresh?: boolean }) => Promise<MapflowClient>;

export function tokenRotatingClient(client: MapflowClient, source: ClientSource): MapflowClient {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (error) {
          if (!(error instanceof MapflowAuthError) || error.status !== 401) throw error;
          const fresh = await source({ refresh: true });
          if (fresh === target) throw error; // the secret holds the same token: it really is refused
          const method = Reflect.get(fresh, property) as (...a: unknown[]) => Promise<unknown>;
          return method.apply(fresh, args);
        }
      };
    },
  });
}
