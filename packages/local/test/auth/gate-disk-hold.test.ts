/**
 * The DynamoDB gate while the state folder's disk is full (json-gate-proxy.ts, issue 39): a write waits for
 * space instead of failing (DynamoDB on AWS never runs out of disk), a read passes; a write the service
 * failed with a 5xx while the disk is full is sent again once space is back; past the hold it fails as
 * the service answered. The service is a stand-in on 127.0.0.1 that counts what reaches it; the disk a
 * stand-in the test fills and frees.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialStore } from '../../src/auth/credentials.ts';
import { startJsonGateProxy, writesToDisk, type JsonGateProxy } from '../../src/auth/json-gate-proxy.ts';
import { signedRequest } from '../../../../test/support/signed-request.ts';

/** A disk the test fills and frees: whenFree waits until `free()` (true) or `giveUp()` (false, and at once after it, as disk-watch.ts). */
function fakeDisk() {
  let waiting: ((free: boolean) => void)[] = [];
  let heldOnce: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (heldOnce = resolve));
  const disk = {
    full: true,
    gaveUp: false,
    holds: 0,
    /** Resolves at the first write held. */
    held,
    check: async () => disk.full,
    whenFree: (_what: string) =>
      new Promise<boolean>((resolve) => {
        if (disk.gaveUp) return resolve(false);
        disk.holds++;
        waiting.push(resolve);
        heldOnce();
      }),
    free() {
      disk.full = false;
      for (const resolve of waiting.splice(0)) resolve(true);
    },
    giveUp() {
      disk.gaveUp = true;
      for (const resolve of waiting.splice(0)) resolve(false);
    },
  };
  return disk;
}

const putItem = { method: 'POST', path: '/', body: '{"TableName":"ledger","Item":{"jobId":{"S":"a"}}}', headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.PutItem' } };
const getItem = { method: 'POST', path: '/', body: '{"TableName":"ledger","Key":{"jobId":{"S":"a"}}}', headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.GetItem' } };

describe('the DynamoDB gate on a full disk', () => {
  const store = CredentialStore.inMemory();
  let service: Server;
  let target = '';
  /** What reached the service, by operation; and how many writes it fails with 500 (as DynamoDB Local on ENOSPC). */
  const reached: string[] = [];
  let failNext = 0;
  const gates: JsonGateProxy[] = [];

  beforeAll(async () => {
    service = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        reached.push(String(request.headers['x-amz-target']).split('.')[1] ?? '');
        if (failNext > 0) {
          failNext--;
          response.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
          response.end('{"__type":"com.amazonaws.dynamodb.v20120810#InternalFailure","message":"The request processing has failed because of an unknown error, exception or failure."}');
          return;
        }
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end('{}');
      });
    });
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    target = `http://127.0.0.1:${(service.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    for (const gate of gates) await gate.close();
    await new Promise((resolve) => service.close(resolve));
  });

  const gateOn = async (disk: ReturnType<typeof fakeDisk>) => {
    reached.length = 0;
    const gate = await startJsonGateProxy({ service: 'dynamodb', target, store, disk });
    gates.push(gate);
    return gate;
  };

  it('tells writes from reads by their operation', () => {
    // Act / Assess
    expect(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems', 'CreateTable'].map((op) => writesToDisk(`DynamoDB_20120810.${op}`))).toEqual([true, true, true, true, true, true]);
    expect(['GetItem', 'BatchGetItem', 'TransactGetItems', 'Query', 'Scan', 'DescribeTable', 'ListTables'].map((op) => writesToDisk(`DynamoDB_20120810.${op}`))).toEqual([false, false, false, false, false, false, false]);
  });

  it('holds a write until space is back, and lets a read pass meanwhile', async () => {
    // Prepare
    const disk = fakeDisk();
    const gate = await gateOn(disk);
    // Act
    const write = signedRequest(gate.endpoint, store.user, putItem, 'dynamodb');
    await disk.held;
    const read = await signedRequest(gate.endpoint, store.user, getItem, 'dynamodb');
    const reachedWhileFull = [...reached];
    disk.free();
    const written = await write;
    // Assess
    expect(read.status).toBe(200);
    expect(reachedWhileFull).toEqual(['GetItem']);
    expect(written.status).toBe(200);
    expect(reached).toEqual(['GetItem', 'PutItem']);
  });

  it('sends a write the service failed on the full disk again once space is back, once', async () => {
    // Prepare: the disk fills as the write goes through (not yet seen full when it arrives)
    const disk = fakeDisk();
    disk.full = false;
    const gate = await gateOn(disk);
    failNext = 1;
    disk.check = async () => (disk.full = true);
    // Act
    const write = signedRequest(gate.endpoint, store.user, putItem, 'dynamodb');
    await disk.held;
    disk.free();
    const written = await write;
    // Assess
    expect(written.status).toBe(200);
    expect(reached).toEqual(['PutItem', 'PutItem']);
    expect(disk.holds).toBe(1);
  });

  it('passes the service\'s 500 on when the disk is not full: no hold', async () => {
    // Prepare
    const disk = fakeDisk();
    disk.full = false;
    const gate = await gateOn(disk);
    failNext = 1;
    // Act
    const written = await signedRequest(gate.endpoint, store.user, putItem, 'dynamodb');
    // Assess
    expect(written.status).toBe(500);
    expect(written.text).toContain('InternalFailure');
    expect(reached).toEqual(['PutItem']);
    expect(disk.holds).toBe(0);
  });

  it('lets a held write fail as the service answers once the hold gives up', async () => {
    // Prepare
    const disk = fakeDisk();
    const gate = await gateOn(disk);
    failNext = 1;
    // Act
    const write = signedRequest(gate.endpoint, store.user, putItem, 'dynamodb');
    await disk.held;
    disk.giveUp();
    const written = await write;
    // Assess: sent once, after the hold, and its failure answered
    expect(written.status).toBe(500);
    expect(reached).toEqual(['PutItem']);
  });
});
