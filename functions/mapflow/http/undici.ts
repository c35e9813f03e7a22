/**
 * An HTTP requester on an undici Dispatcher (a MockAgent in the client tests,
 * or a tuned Agent). Only imported by whoever passes one: the client's default
 * is node:http (./node-http.ts), so undici stays out of the Lambda bundles.
 */
import { request, type Dispatcher } from 'undici';
import type { HttpRequester } from './exchange.ts';

export function undiciRequester(dispatcher?: Dispatcher): HttpRequester {
  return async (url, init) => {
    const res = await request(url, {
      method: init.method as Dispatcher.HttpMethod,
      headers: init.headers,
      body: init.body,
      signal: init.signal,
      dispatcher,
      bodyTimeout: init.bodyTimeoutMs,
      headersTimeout: 0,
    });
    return { statusCode: res.statusCode, headers: res.headers, body: res.body };
  };
}
