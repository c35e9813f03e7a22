/**
 * A route with `resultFormats: ["flatgeobuf"]` gets result.fgb beside
 * result.geojson, end to end on the local bridge, with the same features;
 * job.json says where it is.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deserialize } from 'flatgeobuf/lib/mjs/geojson.js';
import type { LocalBridge } from '../../local/bridge.ts';
import { listKeys, readText, squareAoi, startTestBridge, tempFile } from '../e2e/helpers.ts';

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
    const geojson = JSON.parse(await readText(bridge.s3, bridge.bucket, keys.find((k) => k.endsWith('/result.geojson'))!)) as { features: { properties: unknown }[] };
    const fgbKey = keys.find((k) => k.endsWith('/result.fgb'));
    expect(fgbKey).toBeDefined();
    const object = await bridge.s3.send(new GetObjectCommand({ Bucket: bridge.bucket, Key: fgbKey }));
    const bytes = await object.Body!.transformToByteArray();
    const features: { properties: unknown }[] = [];
    for await (const feature of deserialize(bytes)) features.push(feature as never);
    expect(geojson.features.length).toBeGreaterThan(0);
    expect(features).toHaveLength(geojson.features.length);
    expect(features[0]!.properties).toEqual(geojson.features[0]!.properties);
    const jobJson = JSON.parse(await readText(bridge.s3, bridge.bucket, keys.find((k) => k.endsWith('/job.json'))!));
    expect(jobJson.formats.flatgeobuf).toMatchObject({ key: fgbKey, features: geojson.features.length });
  }, 240_000);
});
