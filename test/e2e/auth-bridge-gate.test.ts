/**
 * No open doors on the local bridge: an unsigned `curl -X PUT` into the
 * inbox, a cross-origin form POST (what any web page can send from the
 * user's browser without a preflight) and a request for a foreign Host (DNS
 * rebinding) are refused by the local S3 as AWS refuses them, and no job
 * starts: no ledger row, no Mapflow processing, no event. The DynamoDB
 * endpoint and the engine's SendTaskSuccess endpoint refuse unsigned requests too. The user's own client, signing with
 * the credentials the bridge issued, still starts a job.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { startTestBridge } from './helpers.ts';
import { rawRequest, signedRequest } from '../support/signed-request.ts';

const GEOJSON = JSON.stringify({
  type: 'FeatureCollection',
  features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]] } }],
});

describe('the local bridge has no open doors', () => {
  let bridge: LocalBridge;
  const refusals: string[] = [];

  beforeAll(async () => {
    bridge = await startTestBridge({ log: (line) => refusals.push(line) });
  }, 180_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('refuses an unsigned PUT, a cross-origin form POST and a foreign Host, and starts no job', { timeout: 120_000 }, async () => {
    // Prepare
    const inbox = `/${bridge.bucket}/inbox/`;
    const form = ['--x', 'Content-Disposition: form-data; name="key"', '', 'inbox/form.geojson', '--x', 'Content-Disposition: form-data; name="file"; filename="f.geojson"', '', GEOJSON, '--x--', ''].join('\r\n');
    // Act
    const answers = [
      await rawRequest(bridge.endpoints.s3, { method: 'PUT', path: `${inbox}curl.geojson`, body: GEOJSON }),
      await rawRequest(bridge.endpoints.s3, { method: 'POST', path: `/${bridge.bucket}`, body: form, headers: { 'content-type': 'multipart/form-data; boundary=x', origin: 'https://evil.example' } }),
      await rawRequest(bridge.endpoints.s3, { method: 'PUT', path: `${inbox}rebound.geojson`, body: GEOJSON, headers: { host: 'evil.example' } }),
    ];
    const dynamodb = await rawRequest(bridge.endpoints.dynamodb, {
      method: 'POST',
      path: '/',
      body: JSON.stringify({ TableName: bridge.ledgerTable, Item: { jobId: { S: 'forged' } } }),
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.PutItem' },
    });
    // The engine's SendTaskSuccess endpoint hands concurrency slots over.
    const sendTaskSuccess = await rawRequest(process.env.BRIDGE_SFN_ENDPOINT!, {
      method: 'POST',
      path: '/',
      body: JSON.stringify({ taskToken: 'guessed', output: '{}' }),
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AWSStepFunctions.SendTaskSuccess' },
    });
    await bridge.waitForJobs();
    // Assess
    expect(answers.map((answer) => [answer.status, /<Code>(\w+)<\/Code>/.exec(answer.text)?.[1]])).toEqual([
      [403, 'AccessDenied'],
      [403, 'AccessDenied'],
      [403, 'AccessDenied'],
    ]);
    expect(dynamodb.status).toBe(400);
    expect(JSON.parse(dynamodb.text).__type).toMatch(/MissingAuthenticationTokenException$/);
    expect(sendTaskSuccess.status).toBe(400);
    expect(JSON.parse(sendTaskSuccess.text).__type).toMatch(/MissingAuthenticationTokenException$/);
    expect(await bridge.ledger.listRecent({ limit: 10 })).toEqual([]);
    expect(bridge.simulator?.stats().processingsCreated).toBe(0);
    expect(await readFile(bridge.eventsFile, 'utf8').catch(() => '')).toBe('');
    expect(refusals.filter((line) => line.startsWith('local bridge: refused')).length).toBe(5);
  });

  it('takes the same upload from a client signing with the issued credentials', { timeout: 120_000 }, async () => {
    // Act
    const answer = await signedRequest(bridge.endpoints.s3, bridge.credentials, { method: 'PUT', path: `/${bridge.bucket}/inbox/signed.geojson`, body: GEOJSON });
    await bridge.waitForJobs();
    // Assess
    expect(answer.status).toBe(200);
    const rows = await bridge.ledger.listRecent({ limit: 10 });
    expect(rows.map((row) => [row.input.key, row.status])).toEqual([['inbox/signed.geojson', 'SUCCEEDED']]);
  });
});
