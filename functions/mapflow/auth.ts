/**
 * Authorization header of the Mapflow API.
 *
 * Two forms are in use: `Bearer <token>` (current reference) and
 * `Basic <base64(email:apitoken)>` (every public client; the token the web app
 * shows is usually already that base64 string). The form is a setting:
 * - 'bearer': `Bearer <token>`, the token as given.
 * - 'basic':  `Basic <token>` when the token already decodes to `user:secret`,
 *             else `Basic base64(email:token)` (an email is then required).
 * - 'auto' (default): Basic when the token already decodes to `user:secret` or an
 *             email is given, else Bearer.
 *
 * The token the web app shows may lack its base64 padding; the official plugin
 * pads it to a multiple of 4 before sending `Basic <token>` (mapflow-qgis
 * mapflow/mapflow.py line 4025, then `login_basic`). So does `padToken`
 * here, before any decision: a pre-encoded token is then recognised, sent as
 * Basic, and never encoded a second time with the email.
 */
import { ConfigurationError } from '../core/errors.ts';

/** How the token is sent; `auto` picks from the token's form (see resolveAuth). */
export const AUTH_SCHEMES = ['basic', 'bearer', 'auto'] as const;
export type AuthScheme = (typeof AUTH_SCHEMES)[number];

export interface ResolvedAuth {
  scheme: 'basic' | 'bearer';
  /** The full Authorization header value. Secret: keep it private. */
  header: string;
  /** Every string that would reveal the credential; the redactor removes them from errors. */
  secrets: string[];
}

/**
 * `{ user, secret }` when `token` is canonical base64 of printable `user:secret`
 * (both sides non-empty), else undefined.
 */
/** The token with base64 padding added up to a multiple of 4 (as the plugin's pad_token). */
export function padToken(token: string): string {
  const trimmed = token.trim();
  if (!/^[A-Za-z0-9+/]+$/.test(trimmed)) return trimmed;
  return trimmed + '='.repeat((4 - (trimmed.length % 4)) % 4);
}

export function decodeBasicCredential(token: string): { user: string; secret: string } | undefined {
  const trimmed = padToken(token);
  if (trimmed.length < 4 || trimmed.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return undefined;
  const decoded = Buffer.from(trimmed, 'base64').toString('utf8');
  // Canonical round trip: rejects strings that merely look like base64.
  if (Buffer.from(decoded, 'utf8').toString('base64') !== trimmed) return undefined;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\ufffd]/.test(decoded)) return undefined;
  const colon = decoded.indexOf(':');
  if (colon <= 0 || colon === decoded.length - 1) return undefined;
  return { user: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

export function resolveAuth(options: { token: string; email?: string; authScheme?: AuthScheme }): ResolvedAuth {
  const token = options.token?.trim();
  if (!token) throw new ConfigurationError('Mapflow token is empty');
  const email = options.email?.trim() || undefined;
  const requested = options.authScheme ?? 'auto';
  if (!(AUTH_SCHEMES as readonly string[]).includes(requested)) {
    throw new ConfigurationError(`Mapflow auth scheme must be basic, bearer or auto (got "${String(requested)}")`);
  }
  const preEncoded = decodeBasicCredential(token);
  const padded = preEncoded ? padToken(token) : token;
  const scheme: 'basic' | 'bearer' = requested === 'auto' ? (preEncoded || email ? 'basic' : 'bearer') : requested;

  const secrets = [token, padded];
  if (preEncoded) secrets.push(preEncoded.secret, `${preEncoded.user}:${preEncoded.secret}`);

  if (scheme === 'bearer') return { scheme, header: `Bearer ${token}`, secrets };

  // Already base64 of "email:apikey" (padded or not): sent as is, never encoded again.
  if (preEncoded) return { scheme, header: `Basic ${padded}`, secrets };
  if (!email) {
    throw new ConfigurationError(
      'Mapflow Basic authentication needs the account email, or a token that is already base64 of "email:token"',
    );
  }
  const credential = Buffer.from(`${email}:${token}`, 'utf8').toString('base64');
  secrets.push(credential, `${email}:${token}`);
  return { scheme, header: `Basic ${credential}`, secrets };
}
