/**
 * Issue 38, point 2: a GeoJSON's objects, arrays and values are counted on
 * its text before JSON.parse builds them: 20 MiB of empty objects is refused
 * JSON_TOO_MANY_VALUES without being parsed (its Plan Processing process was
 * killed at 1 GB, ending a generic INPUT_TOO_COMPLEX).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseAoi } from '../../../../functions/aoi/index.ts';
import { InputRejected } from '../../../../functions/core/errors.ts';
import { checkJsonCounts, MAX_JSON_CONTAINERS, MAX_JSON_VALUES } from '../../../../functions/geojson/bounds.ts';
import { HOSTILE_ROUND3 } from '../../../../packages/bench/fixtures/hostile-round3.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('checkJsonCounts', () => {
  it('counts objects, arrays and values outside strings', () => {
    // Act
    const counts = checkJsonCounts('{"a":[1,2,{"b":"[{,}]"}],"c":"\\"{"}');
    // Assess: the object, the array, the inner object; values: a's array, 1, 2, the inner object, c
    expect(counts).toEqual({ containers: 3, values: 6 });
  });

  it.each([
    ['objects and arrays', `[${'[],'.repeat(MAX_JSON_CONTAINERS)}[]]`],
    ['values', `[${'0,'.repeat(MAX_JSON_VALUES)}0]`],
  ])('refuses more %s than its bound', (what, text) => {
    // Act
    const outcome = (() => {
      try {
        return checkJsonCounts(text);
      } catch (error) {
        return error;
      }
    })();
    // Assess
    expect(outcome).toBeInstanceOf(InputRejected);
    expect((outcome as InputRejected).code).toBe('JSON_TOO_MANY_VALUES');
    expect((outcome as InputRejected).message).toContain(what);
  });
});

describe('parseAoi', () => {
  it('refuses 20 MiB of empty objects with JSON_TOO_MANY_VALUES before JSON.parse is called', () => {
    // Prepare
    const file = new TextEncoder().encode(HOSTILE_ROUND3.find((entry) => entry.file === 'empty-objects-20mib.geojson')!.make() as string);
    const parse = vi.spyOn(JSON, 'parse');
    // Act
    const outcome = (() => {
      try {
        return parseAoi(file);
      } catch (error) {
        return error;
      }
    })();
    // Assess
    expect(file.byteLength).toBeGreaterThan(20 * 1024 * 1024 - 1024);
    expect((outcome as InputRejected).code).toBe('JSON_TOO_MANY_VALUES');
    expect((outcome as InputRejected).message).toMatch(/split the file/);
    expect(parse).not.toHaveBeenCalled();
  });
});
