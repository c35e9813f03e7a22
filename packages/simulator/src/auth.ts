/**
 * Authentication of the one configured account. Accepted forms (spec
 * "Authentication" and real-api-notes.md):
 * - `Bearer <token>`
 * - `Basic base64(email:token)`
 * - `Basic <token>` when the configured token is itself the pre-encoded
 *   credential the web app hands out (base64 of `email:apikey`).
 * Comparisons are constant-time; the token is never logged or echoed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export interface Account {
  readonly email: string;
  readonly token: string;
}

function sameSecret(a: string, b: string): boolean {
  // Hash both sides so the comparison is constant-time whatever the lengths.
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}

/** True when the Authorization header identifies the configured account. */
export function isAuthorized(header: string | undefined, account: Account): boolean {
  if (!header) return false;
  const match = /^\s*(Bearer|Basic)\s+(\S+)\s*$/i.exec(header);
  if (!match) return false;
  const scheme = match[1]!.toLowerCase();
  const credential = match[2]!;
  if (scheme === 'bearer') return sameSecret(credential, account.token);
  if (sameSecret(credential, account.token)) return true;
  const decoded = Buffer.from(credential, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  const email = decoded.slice(0, colon);
  const token = decoded.slice(colon + 1);
  return email.toLowerCase() === account.email.toLowerCase() && sameSecret(token, account.token);
}
