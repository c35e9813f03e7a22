/**
 * The local IAM evaluator (packages/local/src/auth/policy-evaluator.ts): statements,
 * wildcards and every condition operator it evaluates, after AWS's IAM User
 * Guide (policy evaluation logic, condition operators); what it does not
 * evaluate is refused with an error naming it; and the template's own
 * policies, as the local bridge runs them.
 */
import { describe, expect, it } from 'vitest';
import { loadLocalAssembly } from '../../src/assembly/cache.ts';
import { principalsOf, readAssembly } from '../../src/assembly/template.ts';
import { localAssemblySettings } from '../../src/bridge.ts';
import type { PolicyDocument } from '../../src/auth/credentials.ts';
import { CredentialStore, evaluate } from '../../src/auth/gate.ts';
import { compilePolicies, judge, PolicyEvaluationError, wildcardMatcher, type EvaluationRequest } from '../../src/auth/policy-evaluator.ts';

const KEYS = new Set(['s3:prefix', 's3:delimiter', 'aws:principalarn', 'aws:requestedregion']);
const BUCKET = 'arn:aws:s3:::data';
const OBJECT = (key: string) => `${BUCKET}/${key}`;

function verdict(statements: unknown[], request: Partial<EvaluationRequest> & { action: string; resource: string }) {
  const policies = compilePolicies([{ Version: '2012-10-17', Statement: statements }], { contextKeys: KEYS });
  return judge(policies, { context: {}, ...request });
}

/** One Allow of s3:ListBucket on the bucket under `condition`, judged with `context`. */
const listWith = (condition: Record<string, Record<string, unknown>>, context: EvaluationRequest['context']) =>
  verdict([{ Effect: 'Allow', Action: 's3:ListBucket', Resource: BUCKET, Condition: condition }], { action: 's3:ListBucket', resource: BUCKET, context });

describe('statements', () => {
  it('allows what an Allow statement names, and nothing else (implicit deny)', () => {
    // Prepare
    const statements = [{ Effect: 'Allow', Action: ['s3:GetObject', 's3:PutObject'], Resource: OBJECT('inbox/*') }];
    // Act
    const allowed = verdict(statements, { action: 's3:GetObject', resource: OBJECT('inbox/a') });
    const otherKey = verdict(statements, { action: 's3:GetObject', resource: OBJECT('results/a') });
    const otherAction = verdict(statements, { action: 's3:DeleteObject', resource: OBJECT('inbox/a') });
    // Assess
    expect([allowed, otherKey, otherAction]).toEqual(['allowed', 'implicitly-denied', 'implicitly-denied']);
  });

  it('lets an explicit Deny win over an Allow, in whichever policy or order', () => {
    // Prepare: the Deny first in one policy, the Allow in another
    const policies: PolicyDocument[] = [
      { Statement: [{ Effect: 'Deny', Action: 's3:*', Resource: OBJECT('inbox/secret/*') }] },
      { Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: OBJECT('*') }] },
    ];
    const compiled = compilePolicies(policies, { contextKeys: KEYS });
    // Act
    const denied = judge(compiled, { action: 's3:GetObject', resource: OBJECT('inbox/secret/a'), context: {} });
    const allowed = judge(compiled, { action: 's3:GetObject', resource: OBJECT('inbox/a'), context: {} });
    // Assess
    expect([denied, allowed]).toEqual(['explicitly-denied', 'allowed']);
  });

  it('applies NotAction and NotResource to everything they do not name', () => {
    // Prepare: allow all but deletes, on everything but the results prefix
    const statements = [
      { Effect: 'Allow', NotAction: 's3:Delete*', Resource: OBJECT('*') },
      { Effect: 'Deny', Action: 's3:*', NotResource: [OBJECT('inbox/*'), OBJECT('work/*')] },
    ];
    // Act
    const put = verdict(statements, { action: 's3:PutObject', resource: OBJECT('inbox/a') });
    const remove = verdict(statements, { action: 's3:DeleteObject', resource: OBJECT('inbox/a') });
    const outside = verdict(statements, { action: 's3:PutObject', resource: OBJECT('results/a') });
    // Assess
    expect([put, remove, outside]).toEqual(['allowed', 'implicitly-denied', 'explicitly-denied']);
  });
});

describe('wildcards', () => {
  it.each([
    ['s3:Get*', 's3:GetObjectVersion', true, true],
    ['S3:GETOBJECT', 's3:GetObject', true, true],
    ['s3:Get?bject', 's3:GetObject', true, true],
    ['s3:Get?bject', 's3:GetObjectX', true, false],
    [OBJECT('inbox/*'), OBJECT('inbox/a/b.tif'), false, true],
    [OBJECT('inbox/*'), OBJECT('INBOX/a'), false, false],
    [OBJECT('in?ox/a'), OBJECT('inbox/a'), false, true],
    [OBJECT('inbox/a.b'), OBJECT('inbox/aXb'), false, false],
    [OBJECT('inbox/*'), OBJECT('inbox/a\nb'), false, true],
    [OBJECT('inbox/*'), OBJECT('inbox/a\u2028b'), false, true],
    [OBJECT('inbox/*'), OBJECT('inbox/a\u2029b'), false, true],
    [OBJECT('inbox/?'), OBJECT('inbox/\u2028'), false, true],
    [OBJECT('inbox/?'), OBJECT('inbox/😀'), false, true],
    [OBJECT('inbox/(a)+$'), OBJECT('inbox/(a)+$'), false, true],
  ])('%j matches %j (ignoring case: %s): %s', (pattern, value, ignoreCase, expected) => {
    // Act
    const matched = wildcardMatcher(pattern, ignoreCase)(value);
    // Assess
    expect(matched).toBe(expected);
  });
});

describe('condition operators', () => {
  it.each([
    ['StringEquals', 's3:prefix', 'inbox/', { 's3:prefix': 'inbox/' }, 'allowed'],
    ['StringEquals', 's3:prefix', 'inbox/', { 's3:prefix': 'INBOX/' }, 'implicitly-denied'],
    ['StringEquals', 's3:prefix', 'inbox/', {}, 'implicitly-denied'],
    ['StringNotEquals', 's3:prefix', 'inbox/', { 's3:prefix': 'work/' }, 'allowed'],
    ['StringNotEquals', 's3:prefix', ['inbox/', 'work/'], { 's3:prefix': 'work/' }, 'implicitly-denied'],
    ['StringNotEquals', 's3:prefix', 'inbox/', {}, 'allowed'],
    ['StringEqualsIgnoreCase', 's3:prefix', 'inbox/', { 's3:prefix': 'INBOX/' }, 'allowed'],
    ['StringNotEqualsIgnoreCase', 's3:prefix', 'inbox/', { 's3:prefix': 'INBOX/' }, 'implicitly-denied'],
    ['StringLike', 's3:prefix', ['inbox/*', 'work/*'], { 's3:prefix': 'work/a' }, 'allowed'],
    ['StringLike', 's3:prefix', 'inbox/*', { 's3:prefix': 'results/' }, 'implicitly-denied'],
    ['StringLike', 's3:prefix', 'inbox/*', {}, 'implicitly-denied'],
    ['StringNotLike', 's3:prefix', 'inbox/*', { 's3:prefix': 'results/' }, 'allowed'],
    ['StringNotLike', 's3:prefix', 'inbox/*', { 's3:prefix': 'inbox/a' }, 'implicitly-denied'],
    ['ArnEquals', 'aws:PrincipalArn', 'arn:aws:iam::000000000000:role/r', { 'aws:PrincipalArn': 'arn:aws:iam::000000000000:role/r' }, 'allowed'],
    ['ArnLike', 'aws:PrincipalArn', 'arn:aws:iam::*:role/bridge-*', { 'aws:PrincipalArn': 'arn:aws:iam::000000000000:role/bridge-x' }, 'allowed'],
    ['ArnLike', 'aws:PrincipalArn', 'arn:aws:iam::*:role/bridge-*', { 'aws:PrincipalArn': 'arn:aws:iam::000000000000:user/bridge-x' }, 'implicitly-denied'],
    ['ArnLike', 'aws:PrincipalArn', 'arn:aws:iam::*:role/bridge-*', { 'aws:PrincipalArn': 'not-an-arn' }, 'implicitly-denied'],
    ['ArnNotEquals', 'aws:PrincipalArn', 'arn:aws:iam::000000000000:role/r', { 'aws:PrincipalArn': 'arn:aws:iam::000000000000:role/s' }, 'allowed'],
    ['ArnNotLike', 'aws:PrincipalArn', 'arn:aws:iam::*:role/*', { 'aws:PrincipalArn': 'arn:aws:iam::000000000000:role/s' }, 'implicitly-denied'],
    ['Bool', 's3:delimiter', 'true', { 's3:delimiter': 'true' }, 'allowed'],
    ['Bool', 's3:delimiter', true, { 's3:delimiter': 'false' }, 'implicitly-denied'],
    ['Null', 's3:delimiter', 'true', {}, 'allowed'],
    ['Null', 's3:delimiter', 'true', { 's3:delimiter': '/' }, 'implicitly-denied'],
    ['Null', 's3:delimiter', 'false', { 's3:delimiter': '/' }, 'allowed'],
    ['StringEqualsIfExists', 's3:delimiter', '/', {}, 'allowed'],
    ['StringEqualsIfExists', 's3:delimiter', '/', { 's3:delimiter': ',' }, 'implicitly-denied'],
    ['ArnLikeIfExists', 'aws:PrincipalArn', 'arn:aws:iam::*:role/*', {}, 'allowed'],
    ['ForAnyValue:StringLike', 's3:prefix', 'inbox/*', { 's3:prefix': ['results/', 'inbox/a'] }, 'allowed'],
    ['ForAnyValue:StringLike', 's3:prefix', 'inbox/*', {}, 'implicitly-denied'],
    ['ForAllValues:StringLike', 's3:prefix', 'inbox/*', { 's3:prefix': ['results/', 'inbox/a'] }, 'implicitly-denied'],
    ['ForAllValues:StringLike', 's3:prefix', ['inbox/*', 'results/*'], { 's3:prefix': ['results/', 'inbox/a'] }, 'allowed'],
    ['ForAllValues:StringEquals', 's3:prefix', 'inbox/', {}, 'allowed'],
    ['ForAllValues:StringNotEquals', 's3:prefix', 'inbox/', { 's3:prefix': ['work/', 'inbox/'] }, 'implicitly-denied'],
  ] as const)('%s %s %j with %j: %s', (operator, key, value, context, expected) => {
    // Act
    const decision = listWith({ [operator]: { [key]: value } }, context);
    // Assess
    expect(decision).toBe(expected);
  });

  it('ANDs the keys and operators of a Condition, and reads key names in any case', () => {
    // Prepare
    const condition = { StringLike: { 'S3:Prefix': 'inbox/*' }, StringEquals: { 's3:delimiter': '/' } };
    // Act
    const both = listWith(condition, { 's3:prefix': 'inbox/a', 's3:delimiter': '/' });
    const one = listWith(condition, { 's3:prefix': 'inbox/a', 's3:delimiter': ',' });
    // Assess
    expect([both, one]).toEqual(['allowed', 'implicitly-denied']);
  });
});

describe('what it does not evaluate, refused by name', () => {
  it.each([
    [{ Effect: 'Allow', Action: '*', Resource: '*', Condition: { NumericLessThan: { 's3:prefix': '5' } } }, 'unsupported condition operator NumericLessThan in statement 0 (Only) of policy 0'],
    [{ Effect: 'Allow', Action: '*', Resource: '*', Condition: { constructor: { 's3:prefix': 'x' } } }, 'unsupported condition operator constructor in statement 0 (Only) of policy 0'],
    [{ Effect: 'Allow', Action: '*', Resource: '*', Condition: { 'ForAnyValue:Null': { 's3:prefix': 'true' } } }, 'unsupported condition operator ForAnyValue:Null in statement 0 (Only) of policy 0'],
    [{ Effect: 'Allow', Action: '*', Resource: '*', Condition: { StringEquals: { 'dynamodb:LeadingKeys': 'x' } } }, 'unsupported condition key dynamodb:LeadingKeys in statement 0 (Only) of policy 0'],
    [{ Effect: 'Allow', Action: '*', Resource: '*', Principal: '*' }, 'unsupported policy element Principal in statement 0 (Only) of policy 0'],
    [{ Effect: 'Allow', Action: '*', Resource: 'arn:aws:s3:::data/${aws:username}/*' }, 'uses a policy variable'],
    [{ Effect: 'Allow', Action: '*', NotAction: 's3:*', Resource: '*' }, 'must have exactly one of Action and NotAction'],
    [{ Effect: 'Allow', Action: '*' }, 'must have exactly one of Resource and NotResource'],
    [{ Effect: 'allow', Action: '*', Resource: '*' }, 'not Allow or Deny'],
  ])('refuses %j', (statement, message) => {
    // Act
    const compile = () => compilePolicies([{ Version: '2012-10-17', Statement: [{ Sid: 'Only', ...statement }] }], { contextKeys: KEYS });
    // Assess
    expect(compile).toThrow(PolicyEvaluationError);
    expect(compile).toThrow(message);
  });

  it('refuses every request of a role whose policy it cannot evaluate, naming the element, even one another statement allows', async () => {
    // Prepare
    const store = CredentialStore.inMemory();
    const issued = store.addPrincipal('odd', 'arn:aws:iam::000000000000:role/odd', [
      {
        Version: '2012-10-17',
        Statement: [
          { Effect: 'Allow', Action: 's3:GetObject', Resource: OBJECT('*') },
          { Sid: 'Dated', Effect: 'Deny', Action: 's3:*', Resource: '*', Condition: { DateGreaterThan: { 'aws:CurrentTime': '2030-01-01T00:00:00Z' } } },
        ],
      },
    ]);
    // Act
    const decision = await evaluate(store.principal(issued.accessKeyId)!, [{ action: 's3:GetObject', resource: OBJECT('inbox/a') }]);
    // Assess
    expect(decision).toMatchObject({ allowed: false, error: 'unsupported condition operator DateGreaterThan in statement 1 (Dated) of policy 0' });
  });
});

describe("the template's own policies", () => {
  it('evaluates every role of the synthesized template, as the local bridge runs them', async () => {
    // Prepare: the assembly the local bridge runs, its policies resolved to local ARNs
    const assembly = await loadLocalAssembly(localAssemblySettings({}));
    const model = await readAssembly(assembly.dir, { bucket: 'data', ledgerTable: 'ledger', stateMachineName: 'jobs' }, assembly.templateFile);
    const principals = principalsOf(model);
    const store = CredentialStore.inMemory();
    const as = (name: string) => {
      const role = principals.find((principal) => principal.name === name);
      if (!role) throw new Error(`no role for ${name}`);
      return store.principal(store.addPrincipal(name, role.roleArn, role.policies).accessKeyId)!;
    };

    // Act
    const compiles = principals.map((principal) => () => compilePolicies(principal.policies, { contextKeys: new Set(['s3:prefix']) }));
    const writeResult = await evaluate(as('store-results'), [{ action: 's3:PutObject', resource: OBJECT('results/area.geojson/result.geojson') }]);
    const writeInbox = await evaluate(as('store-results'), [{ action: 's3:PutObject', resource: OBJECT('inbox/area.geojson') }]);
    const listInbox = await evaluate(as('dispatch'), [{ action: 's3:ListBucket', resource: BUCKET, context: { 's3:prefix': 'inbox/' } }]);
    const listResults = await evaluate(as('dispatch'), [{ action: 's3:ListBucket', resource: BUCKET, context: { 's3:prefix': 'results/' } }]);

    // Assess: every element of the template is one the evaluator evaluates (StringLike on s3:prefix the only condition)
    expect(principals.length).toBeGreaterThan(10);
    for (const compile of compiles) expect(compile).not.toThrow();
    expect(writeResult).toEqual({ allowed: true });
    expect(writeInbox).toMatchObject({ allowed: false, explicit: false });
    expect(listInbox).toEqual({ allowed: true });
    expect(listResults).toMatchObject({ allowed: false, explicit: false });
  });
});
