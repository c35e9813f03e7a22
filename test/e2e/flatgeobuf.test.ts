/**
 * A route with `resultFormats: ["flatgeobuf"]` gets result.fgb beside
 * result.geojson, end to end on the local bridge, with the same features:
 * read back by flatgeobuf and by loaders.gl's FlatGeobuf loader (its own
 * reader, an independent copy of the format code); job.json says where it is.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deserialize } from 'flatgeobuf/lib/mjs/geojson.js';
import { parse } from '@loaders.gl/core';
import { FlatGeobufLoader } from '@loaders.gl/flatgeobuf';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { listKeys, readText, squareAoi, startTestBridge, tempFile } from './helpers.ts';

describe('resultFormats flatgeobuf, end to end', () => {
  let bridge: LocalBridge;

  beforeAll(async () => {
    bridge = await startTestBridge({
      routes: JSON.stringify({ routes: [{ name: 'default', prefix: '', resultFormats: ['flatgeobuf'] }] }),
    });
  });
  afterAll(async () => {
    await bridge?.close();
  });

  it('writes result.fgb with the features of result.geojson', async () => {
    // Act
    const { jobId } = await bridge.putInbox(await tempFile('square.geojson', squareAoi({ sizeDeg: 0.01 })), 'square.geojson');
    const row = await bridge.waitForJob(jobId, { timeoutMs: 180_000 });
    // Assess
    expect(row?.status).toBe('SUCCEEDED');
    const keys = await listKeys(bridge.s3, bridge.bucket, row!.resultPrefix!);
    const geojson = JSON.parse(await readText(bridge.s3, bridge.bucket, keys.find((k) => k.endsWith('/result.geojson'))!)) as { features: { properties: unknown; geometry: { type: string; coordinates: unknown } }[] };
    const fgbKey = keys.find((k) => k.endsWith('/result.fgb'));
    expect(fgbKey).toBeDefined();
    const object = await bridge.s3.send(new GetObjectCommand({ Bucket: bridge.bucket, Key: fgbKey }));
    const bytes = await object.Body!.transformToByteArray();
    const features: { properties: unknown }[] = [];
    for await (const feature of deserialize(bytes)) features.push(feature as never);
    expect(geojson.features.length).toBeGreaterThan(0);
    expect(features).toHaveLength(geojson.features.length);
    expect(features[0]!.properties).toEqual(geojson.features[0]!.properties);
    // The other reader
    const table = (await parse(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer, FlatGeobufLoader, {
      flatgeobuf: { shape: 'geojson-table' },
      worker: false,
    } as never)) as unknown as { features: { properties: Record<string, unknown>; geometry: { type: string; coordinates: unknown } }[] };
    expect(table.features).toHaveLength(geojson.features.length);
    const last = geojson.features.length - 1;
    expect(table.features[last]!.geometry).toEqual(geojson.features[last]!.geometry);
    expect(table.features[last]!.properties).toMatchObject(geojson.features[last]!.properties as Record<string, unknown>);
    const jobJson = JSON.parse(await readText(bridge.s3, bridge.bucket, keys.find((k) => k.endsWith('/job.json'))!));
    expect(jobJson.formats.flatgeobuf).toMatchObject({ key: fgbKey, features: geojson.features.length });
  }, 240_000);
});
