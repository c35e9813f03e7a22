/**
 * B6: a file that is not JSON is refused without copying its bytes into the
 * message (which goes to the terminal, report.json, the ledger and events),
 * and a known binary format is named with what to do.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';

const cogeo = readFileSync(fileURLToPath(new URL('../../../../samples/rasters/cogeo.tif', import.meta.url)));

/** Bytes below U+0020, DEL, C1 controls or U+FFFD: what must never reach a message. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\uFFFD]/;

function rejection(file: string | Uint8Array): InputRejected {
  try {
    parseAoi(file);
  } catch (error) {
    expect(error).toBeInstanceOf(InputRejected);
    return error as InputRejected;
  }
  throw new Error('parseAoi accepted the input');
}

/** `magic` followed by bytes that are not text (as a real file of that kind would be). */
function fileStarting(magic: number[]): Buffer {
  const noise = Buffer.alloc(2048);
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 131 + 7) % 256;
  return Buffer.concat([Buffer.from(magic), noise]);
}

describe('NOT_JSON never carries binary bytes', () => {
  it('names a GeoTIFF dropped as .geojson and says to name it .tif', () => {
    // Act
    const error = rejection(cogeo);

    // Assess
    expect(error.code).toBe('NOT_JSON');
    expect(error.message).toMatch(/looks like a TIFF image: name it \.tif \(or \.tiff\)/);
    expect(error.message).not.toMatch(UNPRINTABLE);
  });

  it('does the same when the TIFF arrives as text decoded from UTF-8', () => {
    // Act
    const error = rejection(cogeo.toString('utf8'));

    // Assess
    expect(error.code).toBe('NOT_JSON');
    expect(error.message).toMatch(/TIFF image/);
    expect(error.message).not.toMatch(UNPRINTABLE);
  });

  it.each([
    ['big-endian TIFF', [0x4d, 0x4d, 0x00, 0x2a], /TIFF image: name it \.tif/],
    ['PNG', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], /PNG image.*GeoTIFF/],
    ['JPEG', [0xff, 0xd8, 0xff, 0xe0], /JPEG image.*GeoTIFF/],
    ['ZIP', [0x50, 0x4b, 0x03, 0x04], /ZIP archive.*unzip it/],
    ['PDF', [0x25, 0x50, 0x44, 0x46, 0x2d], /PDF document/],
    ['gzip', [0x1f, 0x8b, 0x08], /gzip-compressed.*gunzip/],
  ])('names a %s file', (_label, magic, expected) => {
    // Act
    const error = rejection(fileStarting(magic));

    // Assess
    expect(error.code).toBe('NOT_JSON');
    expect(error.message).toMatch(expected);
    expect(error.message).not.toMatch(UNPRINTABLE);
  });

  it('calls an unknown binary file binary, quoting none of it', () => {
    // Act
    const error = rejection(fileStarting([0x00, 0x01, 0x02, 0x03]));

    // Assess
    expect(error.code).toBe('NOT_JSON');
    expect(error.message).toMatch(/binary file, not text/);
    expect(error.message).not.toMatch(UNPRINTABLE);
  });

  it('quotes broken text as a short printable excerpt', () => {
    // Prepare: JSON-ish text with a NUL, an escape sequence and a very long tail
    const text = `{"type": \u0000\u001b[31m ${'x'.repeat(5000)}`;

    // Act
    const error = rejection(text);

    // Assess
    expect(error.code).toBe('NOT_JSON');
    expect(error.message).toMatch(/not valid JSON \(.+\); save it again as GeoJSON/);
    expect(error.message).not.toMatch(UNPRINTABLE);
    expect(error.message.length).toBeLessThan(300);
  });

  it('quotes a geometry type, feature name and CRS name without their control characters', () => {
    // Prepare
    const typed = JSON.stringify({ type: 'Feature', properties: {}, geometry: { type: 'Circle\u0000\u0007', coordinates: [] } });
    const named = JSON.stringify({ type: 'Feature', properties: { name: 'Bern\u0000\u001b[2J' }, geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 1], [0, 0]]] } });
    const crs = JSON.stringify({ type: 'FeatureCollection', crs: { type: 'name', properties: { name: 'EPSG:2056\u0000' } }, features: [] });

    // Act
    const errors = [rejection(typed), rejection(named), rejection(crs)];

    // Assess
    expect(errors.map((e) => e.code)).toEqual(['NOT_GEOJSON', 'INVALID_GEOMETRY', 'COORDINATES_OUT_OF_RANGE']);
    expect(errors[0]!.message).toMatch(/unknown geometry type "Circle\?\?"/);
    expect(errors[1]!.message).toMatch(/feature 0 \('Bern\?\?\[2J'\)/);
    for (const error of errors) expect(error.message).not.toMatch(UNPRINTABLE);
  });
});
