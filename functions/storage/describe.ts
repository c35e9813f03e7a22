/**
 * Speaking of stored files in messages: what a dropped file really is, from
 * its first bytes; how to quote user content safely; sizes.
 *
 * Rejection messages travel to the terminal, report.json, the ledger and
 * EventBridge: a NUL or an escape sequence copied from a binary file would
 * corrupt all of them, so user text is only ever quoted through `printable`.
 */
import { wellFormed } from '../core/text.ts';

/** A binary format a user may drop under the wrong name, with the advice that goes with it. */
export interface KnownFormat {
  /** What it is, as a user would say it: "a TIFF image". */
  description: string;
  /** What to do about it. */
  advice: string;
}

interface Signature extends KnownFormat {
  magic: readonly number[];
}

const BRIDGE_FORMATS = 'the bridge takes GeoTIFF (.tif) and GeoJSON (.geojson) files';

/** Magic numbers: https://en.wikipedia.org/wiki/List_of_file_signatures */
const SIGNATURES: readonly Signature[] = [
  { magic: [0x49, 0x49, 0x2a, 0x00], description: 'a TIFF image', advice: 'name it .tif (or .tiff)' },
  { magic: [0x4d, 0x4d, 0x00, 0x2a], description: 'a TIFF image', advice: 'name it .tif (or .tiff)' },
  { magic: [0x49, 0x49, 0x2b, 0x00], description: 'a BigTIFF image', advice: 'name it .tif (or .tiff)' },
  { magic: [0x4d, 0x4d, 0x00, 0x2b], description: 'a BigTIFF image', advice: 'name it .tif (or .tiff)' },
  { magic: [0x89, 0x50, 0x4e, 0x47], description: 'a PNG image', advice: `${BRIDGE_FORMATS}: export it as a georeferenced GeoTIFF` },
  { magic: [0xff, 0xd8, 0xff], description: 'a JPEG image', advice: `${BRIDGE_FORMATS}: export it as a georeferenced GeoTIFF` },
  { magic: [0x50, 0x4b, 0x03, 0x04], description: 'a ZIP archive (a zipped shapefile or a KMZ?)', advice: 'unzip it and export the polygons as GeoJSON (.geojson)' },
  { magic: [0x25, 0x50, 0x44, 0x46], description: 'a PDF document', advice: BRIDGE_FORMATS },
  { magic: [0x1f, 0x8b], description: 'a gzip-compressed file', advice: 'decompress it (gunzip) and drop the file inside' },
];

/** The known binary format these bytes start with, if any. */
export function sniffFormat(head: Uint8Array): KnownFormat | undefined {
  const found = SIGNATURES.find(({ magic }) => magic.every((byte, i) => head[i] === byte));
  return found && { description: found.description, advice: found.advice };
}

/** Control, format (but the zero-width joiner inside emoji), private-use, unassigned, line/paragraph separators and U+FFFD (a byte that was not UTF-8). */
const NOT_PRINTABLE = /(?!\u200d)[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}\uFFFD]/gu;
/** Default longest excerpt of user text quoted in a message, in characters. */
export const MAX_EXCERPT_CHARS = 80;

/**
 * User text made safe to quote in a message: every character that is not
 * printable becomes '?' (a lone surrogate U+FFFD), runs of whitespace one space, and the result is cut
 * to `maxChars` (with '…'). Whole code points are kept (no half emoji).
 */
export function printable(text: string, maxChars = MAX_EXCERPT_CHARS): string {
  // A lone surrogate (category Cs, not matched above) has no UTF-8 form: U+FFFD.
  const clean = wellFormed(text.replace(/[\t\n\r ]+/g, ' ').replace(NOT_PRINTABLE, '?'));
  const chars = Array.from(clean);
  return chars.length > maxChars ? `${chars.slice(0, maxChars - 1).join('')}…` : clean;
}

/** True when a text decoded from a file is mostly not text: a binary file. */
export function looksBinary(text: string): boolean {
  const sample = Array.from(text.slice(0, 512));
  if (sample.length === 0) return false;
  const bad = sample.filter((c) => /[\p{Cc}\uFFFD]/u.test(c) && !/[\t\n\r]/.test(c)).length;
  return bad > 0 && bad / sample.length > 0.1;
}

/** Sizes in binary units, named as such (1 MiB = 1024 × 1024 bytes). */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KiB`;
  return `${bytes} bytes`;
}
