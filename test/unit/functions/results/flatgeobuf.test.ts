/**
 * FlatGeobuf results: the streamed file is byte for byte what flatgeobuf's
 * own (whole-collection) serializer makes of the same features, and it reads
 * back, through flatgeobuf's stream reader, as the same features; mixed and
 * missing properties, several geometry types, and a result too large to be
 * one chunk.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { deserialize, serialize } from 'flatgeobuf/lib/mjs/geojson.js';
import { flatGeobufStream, scanResultSchema } from '../../../../functions/results/flatgeobuf.ts';

const square = (x: number, y: number) => ({ type: 'Polygon', coordinates: [[[x, y], [x + 0.001, y], [x + 0.001, y + 0.001], [x, y + 0.001], [x, y]]] });
function collection(n: number) {
  return {
    type: 'FeatureCollection',
    features: Array.from({ length: n }, (_, i) => ({
      type: 'Feature',
      properties: { id: i, class: i % 2 ? 'building' : 'shed', confidence: i / n, verified: i % 3 === 0 },
      geometry: square(7.44 + (i % 100) * 0.001, 46.94 + Math.floor(i / 100) * 0.001),
    })),
  };
}
/** The GeoJSON text streamed in small chunks, as S3 would. */
const chunked = (text: string, size = 4096) => () => Promise.resolve(Readable.from(Array.from({ length: Math.ceil(text.length / size) }, (_, i) => Buffer.from(text.slice(i * size, (i + 1) * size)))));
async function collect(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('FlatGeobuf results', () => {
  it('streams the same bytes as flatgeobuf.serialize, and reads back as the same features', async () => {
    // Prepare: 2,000 features, ~600 KB of GeoJSON in 4 KiB chunks
    const fc = collection(2000);
    const text = JSON.stringify(fc);
    // Act
    const { body, done } = await flatGeobufStream(chunked(text));
    const bytes = await collect(body);
    const written = await done;
    const features = [];
    for await (const feature of deserialize(new Uint8Array(bytes))) features.push(feature);
    // Assess
    expect(written).toBe(2000);
    expect(Buffer.from(bytes)).toEqual(Buffer.from(serialize(fc as never, 4326)));
    expect(features).toHaveLength(2000);
    expect(features[1234]).toMatchObject({ properties: { id: 1234, class: 'shed', verified: false }, geometry: { type: 'Polygon' } });
    expect((features[1234] as { geometry: { coordinates: number[][][] } }).geometry.coordinates).toEqual(fc.features[1234]!.geometry.coordinates);
  });

  it('takes properties that change kind or go missing, and mixed geometry types', async () => {
    // Prepare
    const fc = {
      type: 'FeatureCollection',
      features: [
        { type: 'Feature', properties: { a: null, b: 1, c: 'x' }, geometry: square(0, 0) },
        { type: 'Feature', properties: { a: 2, b: 'one', d: { nested: true } }, geometry: { type: 'MultiPolygon', coordinates: [square(1, 1).coordinates] } },
        { type: 'Feature', properties: null, geometry: { type: 'Point', coordinates: [3, 3] } },
        { type: 'Feature', properties: { a: 3 }, geometry: null },
      ],
    };
    const open = chunked(JSON.stringify(fc), 7);
    // Act
    const schema = await scanResultSchema(await open());
    const { body, done } = await flatGeobufStream(open);
    const bytes = await collect(body);
    const features = [];
    for await (const feature of deserialize(new Uint8Array(bytes))) features.push(feature);
    // Assess
    expect([...schema.columns]).toEqual([['a', 'number'], ['b', 'json'], ['c', 'string'], ['d', 'json']]);
    expect(await done).toBe(3); // the feature without a geometry has no place in FlatGeobuf
    expect(features.map((f) => (f as { geometry: { type: string } }).geometry.type)).toEqual(['Polygon', 'MultiPolygon', 'Point']);
    expect((features[1] as { properties: Record<string, unknown> }).properties).toMatchObject({ a: 2, b: 'one', d: { nested: true } });
  });
});
