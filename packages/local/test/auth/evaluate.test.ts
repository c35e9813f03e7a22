/**
 * Evaluation of in-process calls (the engine invoking a function as the state
 * machine's role), and of the user's own principal, which may do anything.
 */
import { describe, expect, it } from 'vitest';
import { CredentialStore, accessDeniedMessage, evaluate } from '../../src/auth/gate.ts';

const FN = (name: string) => `arn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-${name}`;

describe('evaluate', () => {
  const store = CredentialStore.inMemory();
  const sm = store.addPrincipal('state-machine', 'arn:aws:iam::000000000000:role/bridge-StateMachineRole', [
    { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'lambda:InvokeFunction', Resource: [FN('register-job'), `${FN('register-job')}:*`] }] },
  ]);
  const principal = store.principal(sm.accessKeyId)!;

  it('allows what the role allows and names what it does not, as AWS does', async () => {
    // Act
    const allowed = await evaluate(principal, [{ action: 'lambda:InvokeFunction', resource: FN('register-job') }]);
    const denied = await evaluate(principal, [{ action: 'lambda:InvokeFunction', resource: FN('finish-job') }]);
    // Assess
    expect(allowed).toEqual({ allowed: true });
    expect(denied.allowed).toBe(false);
    expect(accessDeniedMessage(principal, denied as Extract<typeof denied, { allowed: false }>)).toBe(
      `User: arn:aws:sts::000000000000:assumed-role/bridge-StateMachineRole/state-machine is not authorized to perform: lambda:InvokeFunction on resource: ${FN('finish-job')} because no identity-based policy allows the lambda:InvokeFunction action`,
    );
  });

  it('judges a repeated request once per principal, and a changed role afresh', async () => {
    // Prepare: one role that allows a table, and another of the same name that allows nothing
    const TABLE = 'arn:aws:dynamodb:us-east-1:000000000000:table/ledger';
    const grant = store.addPrincipal('ledger-user', 'arn:aws:iam::000000000000:role/bridge-Ledger', [
      { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'dynamodb:GetItem', Resource: TABLE }] },
    ]);
    const without = store.addPrincipal('ledger-user', 'arn:aws:iam::000000000000:role/bridge-Ledger', [
      { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'dynamodb:PutItem', Resource: TABLE }] },
    ]);
    const granted = store.principal(grant.accessKeyId)!;
    const refused = store.principal(without.accessKeyId)!;
    const request = [{ action: 'dynamodb:GetItem', resource: TABLE }];
    await evaluate(granted, request);

    // Act: the same request a thousand times (a millisecond each when evaluated)
    const started = process.cpuUsage();
    const decisions = await Promise.all(Array.from({ length: 1000 }, () => evaluate(granted, request)));
    const cpuMs = (process.cpuUsage(started).user + process.cpuUsage(started).system) / 1000;
    const other = await evaluate(refused, request);

    // Assess
    expect(new Set(decisions.map((decision) => decision.allowed))).toEqual(new Set([true]));
    expect(other).toMatchObject({ allowed: false, explicit: false, request: request[0] });
    console.log(`1000 repeated judgements: ${cpuMs.toFixed(0)} ms of CPU`);
  });

  it.each([
    ['a line separator (U+2028)', 'inbox/a\u2028b.geojson'],
    ['a paragraph separator (U+2029)', 'inbox/a\u2029b.geojson'],
    ['a newline', 'inbox/a\nb.geojson'],
  ])('matches a key with %s against a wildcard, as S3 keys may hold any character (issue 38)', async (_, key) => {
    // Prepare: the grant lib/private/permissions.ts makes on a prefix (bucket/prefix*)
    const reader = store.addPrincipal('inspect', 'arn:aws:iam::000000000000:role/bridge-Inspect', [
      { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: 'arn:aws:s3:::data/inbox/*' }] },
    ]);
    // Act
    const decision = await evaluate(store.principal(reader.accessKeyId)!, [{ action: 's3:GetObject', resource: `arn:aws:s3:::data/${key}` }]);
    // Assess
    expect(decision).toEqual({ allowed: true });
  });

  it('refuses an action the evaluator does not know instead of guessing', async () => {
    // Act
    const decision = await evaluate(principal, [{ action: 'lambda:NoSuchAction', resource: FN('register-job') }]);
    // Assess
    expect(decision).toMatchObject({ allowed: false, error: expect.any(String) });
  });

  it("lets the user's own principal do anything", async () => {
    // Act
    const decision = await evaluate(store.user, [{ action: 's3:DeleteBucket', resource: 'arn:aws:s3:::any' }]);
    // Assess
    expect(decision).toEqual({ allowed: true });
  });

  it('judges task-token calls on the state machine, as Step Functions does (a policy on its ARN allows them)', async () => {
    // Prepare: the grant lib/private/permissions.ts makes (workflow:respond), and one on another state machine
    const machine = 'arn:aws:states:us-east-1:000000000000:stateMachine:mapflow-bridge-jobs';
    const granted = store.addPrincipal('admit-job', 'arn:aws:iam::000000000000:role/bridge-AdmitJobRole', [
      { Statement: [{ Effect: 'Allow', Action: 'states:SendTaskSuccess', Resource: 'arn:aws:states:us-east-1:000000000000:stateMachine:*' }] },
    ]);
    const elsewhere = store.addPrincipal('other', 'arn:aws:iam::000000000000:role/other', [
      { Statement: [{ Effect: 'Allow', Action: 'states:SendTask*', Resource: 'arn:aws:states:us-east-1:000000000000:stateMachine:another' }] },
    ]);
    // Act
    const allowed = await evaluate(store.principal(granted.accessKeyId)!, [{ action: 'states:SendTaskSuccess', resource: machine }]);
    const failure = await evaluate(store.principal(granted.accessKeyId)!, [{ action: 'states:SendTaskFailure', resource: machine }]);
    const denied = await evaluate(store.principal(elsewhere.accessKeyId)!, [{ action: 'states:SendTaskSuccess', resource: machine }]);
    // Assess
    expect(allowed).toEqual({ allowed: true });
    expect(failure).toMatchObject({ allowed: false, explicit: false });
    expect(denied).toMatchObject({ allowed: false, explicit: false });
  });
});
