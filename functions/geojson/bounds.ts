/**
 * Bounds on what parsing a GeoJSON may build, counted on its text before
 * JSON.parse builds anything: every object and array is a heap object of
 * about 60-90 bytes once parsed (and more for the walks after it), whatever
 * its few bytes of text. A 20 MiB file of empty objects (`[{},{},...]`, 6.9
 * million of them) took 630 MB to parse alone, and its Plan Processing
 * process was killed at 1 GB, ending a generic INPUT_TOO_COMPLEX.
 *
 * One linear pass over the text, in constant memory, outside strings.
 */
import { InputRejected } from '../core/errors.ts';

/**
 * Most objects and arrays in one file (2,000,000: about 220 MB once parsed).
 * The largest file the other limits accept needs about 110,000 (100,000
 * positions, their rings, polygons and features); files over those limits
 * but under this one (a million vertices, 240,000 triangles: 1.4 million)
 * are still parsed, so that they are refused with their own code
 * (TOO_MANY_POSITIONS, TOO_MANY_POLYGONS) and its advice.
 */
export const MAX_JSON_CONTAINERS = 2_000_000;
/** Most values (members and elements, numbers and strings included) in one file: 8,000,000 (about 150 MB once parsed). */
export const MAX_JSON_VALUES = 8_000_000;

/** What the pass counted. */
export interface JsonCounts {
  containers: number;
  values: number;
}

/**
 * Counts the objects and arrays, and the values, of a JSON text without
 * parsing it, stopping as soon as a bound is passed.
 * @throws InputRejected JSON_TOO_MANY_VALUES
 */
export function checkJsonCounts(text: string, bounds: { containers?: number; values?: number } = {}): JsonCounts {
  const maxContainers = bounds.containers ?? MAX_JSON_CONTAINERS;
  const maxValues = bounds.values ?? MAX_JSON_VALUES;
  let containers = 0;
  let values = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      containers++;
      values++;
      if (containers > maxContainers) throw tooMany('objects and arrays', containers, maxContainers);
    } else if (c === 0x2c /* , */) {
      // Each comma starts one more member or element.
      values++;
      if (values > maxValues) throw tooMany('values', values, maxValues);
    }
  }
  return { containers, values };
}

function tooMany(what: string, count: number, max: number): InputRejected {
  return new InputRejected(
    'JSON_TOO_MANY_VALUES',
    `the GeoJSON holds more than ${max.toLocaleString('en-US')} ${what} (counted up to ${count.toLocaleString('en-US')} before stopping); the bridge reads at most ${max.toLocaleString('en-US')}. ` +
      'Keep only the polygons to process and the properties you need (e.g. ogr2ogr -select name in.geojson out.geojson), or split the file',
    { details: { what, max } },
  );
}
