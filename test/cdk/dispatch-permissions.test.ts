/**
 * The dispatch role may list the inbox, and only the inbox: S3 answers
 * HeadObject of a missing key with 404 only to a principal with
 * s3:ListBucket on it (else 403), and dispatch asks about keys that may not
 * exist (EventBridge keys that decoding would change).
 */
import { describe, expect, it } from 'vitest';
import { actionsOf, logicalIdOf, resourcesOf, statementsOfFunction, statementsWith, synthBridge } from './support.ts';

describe('dispatch permissions', () => {
  const synth = synthBridge();

  // The reconciler's inbox sweep lists the inbox too (objects whose notification never came), and only it.
  it.each(['dispatch', 'reconcile'] as const)('grants %s s3:ListBucket on the bucket with an s3:prefix condition on the inbox', (name) => {
    // Act
    const lists = statementsWith(statementsOfFunction(synth, name), 's3:ListBucket');
    // Assess
    const bucketArn = { 'Fn::GetAtt': [logicalIdOf(synth.stack, synth.bridge.bucket), 'Arn'] };
    expect(lists).toHaveLength(1);
    expect(actionsOf(lists[0]!)).toEqual(['s3:ListBucket']);
    expect(resourcesOf(lists[0]!)).toEqual([bucketArn]);
    expect(lists[0]!.Condition).toEqual({ StringLike: { 's3:prefix': ['inbox/*'] } });
  });

  it('grants no other function s3:ListBucket on the inbox', () => {
    // Act
    const others = Object.keys(synth.bridge.functions)
      .filter((name) => name !== 'dispatch' && name !== 'reconcile')
      .flatMap((name) => statementsWith(statementsOfFunction(synth, name as never), 's3:ListBucket'))
      .filter((s) => JSON.stringify(s.Condition ?? {}).includes('inbox/'));
    // Assess
    expect(others).toEqual([]);
  });
});
