/** Issue 38, point 5: a lone surrogate in a feature name never reaches a message (U+FFFD instead). */
import { describe, expect, it } from 'vitest';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { printable } from '../../../../functions/storage/describe.ts';

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe('lone surrogates in user text', () => {
  it('a feature named with a lone surrogate gets U+FFFD in the rejection of its polygon', () => {
    // Prepare: a bow-tie polygon (self-intersecting) named "\ud800x"; JSON's \ud800 escape makes the lone surrogate.
    const file = `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"bad\\ud800name"},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}}]}`;
    // Act
    let error: unknown;
    try {
      parseAoi(file);
    } catch (caught) {
      error = caught;
    }
    // Assess
    expect(error).toBeInstanceOf(InputRejected);
    const message = (error as InputRejected).message;
    expect(message).toContain('bad\ufffdname');
    expect(message).not.toMatch(LONE);
  });

  it('quoted user text (printable) and every typed error message are well formed', () => {
    expect(printable('a\udc00b')).toBe('a\ufffdb');
    expect(new InputRejected('NOT_GEOJSON', `x \ud83d y`).message).toBe('NOT_GEOJSON: x \ufffd y');
  });
});
