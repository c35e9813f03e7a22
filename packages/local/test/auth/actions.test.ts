/**
 * Requests mapped to the IAM actions and resources AWS authorizes them as:
 * S3's REST operations (multipart and copies included), DynamoDB's
 * X-Amz-Target operations (indexes, batches, transactions) and the other
 * JSON-protocol services' resources from the body.
 */
import { describe, expect, it } from 'vitest';
import { jsonAuthorization } from '../../src/auth/json-actions.ts';
import { s3Authorization } from '../../src/auth/s3-actions.ts';

const B = 'arn:aws:s3:::bkt';

describe('S3 REST requests -> IAM', () => {
  it.each([
    ['GET', '/', {}, [['s3:ListAllMyBuckets', '*']]],
    ['GET', '/bkt/inbox/a%20b.tif', {}, [['s3:GetObject', `${B}/inbox/a b.tif`]]],
    ['HEAD', '/bkt/inbox/a.tif', {}, [['s3:GetObject', `${B}/inbox/a.tif`]]],
    ['GET', '/bkt/inbox/a.tif?versionId=3', {}, [['s3:GetObjectVersion', `${B}/inbox/a.tif`]]],
    ['GET', '/bkt/inbox/a.tif?tagging', {}, [['s3:GetObjectTagging', `${B}/inbox/a.tif`]]],
    ['PUT', '/bkt/inbox/a.tif', {}, [['s3:PutObject', `${B}/inbox/a.tif`]]],
    ['PUT', '/bkt/inbox/a.tif', { 'x-amz-tagging': 'k=v' }, [['s3:PutObject', `${B}/inbox/a.tif`], ['s3:PutObjectTagging', `${B}/inbox/a.tif`]]],
    ['PUT', '/bkt/inbox/a.tif?tagging', {}, [['s3:PutObjectTagging', `${B}/inbox/a.tif`]]],
    ['PUT', '/bkt/results/c.tif', { 'x-amz-copy-source': '/src/inbox/a%2Bb.tif' }, [['s3:PutObject', `${B}/results/c.tif`], ['s3:GetObject', 'arn:aws:s3:::src/inbox/a+b.tif']]],
    ['DELETE', '/bkt/inbox/a.tif', {}, [['s3:DeleteObject', `${B}/inbox/a.tif`]]],
    ['DELETE', '/bkt/inbox/a.tif?tagging', {}, [['s3:DeleteObjectTagging', `${B}/inbox/a.tif`]]],
    // Multipart: create, upload part, copy part, complete need s3:PutObject; abort and list parts their own actions.
    ['POST', '/bkt/work/big?uploads', {}, [['s3:PutObject', `${B}/work/big`]]],
    ['PUT', '/bkt/work/big?partNumber=2&uploadId=u1', {}, [['s3:PutObject', `${B}/work/big`]]],
    ['PUT', '/bkt/work/big?partNumber=3&uploadId=u1', { 'x-amz-copy-source': 'bkt/inbox/a.tif' }, [['s3:PutObject', `${B}/work/big`], ['s3:GetObject', `${B}/inbox/a.tif`]]],
    ['POST', '/bkt/work/big?uploadId=u1', {}, [['s3:PutObject', `${B}/work/big`]]],
    ['DELETE', '/bkt/work/big?uploadId=u1', {}, [['s3:AbortMultipartUpload', `${B}/work/big`]]],
    ['GET', '/bkt/work/big?uploadId=u1', {}, [['s3:ListMultipartUploadParts', `${B}/work/big`]]],
    ['GET', '/bkt?uploads', {}, [['s3:ListBucketMultipartUploads', B]]],
    ['GET', '/bkt?location', {}, [['s3:GetBucketLocation', B]]],
    ['HEAD', '/bkt', {}, [['s3:ListBucket', B]]],
    ['PUT', '/bkt', {}, [['s3:CreateBucket', B]]],
    ['DELETE', '/bkt', {}, [['s3:DeleteBucket', B]]],
    ['POST', '/bkt?delete', {}, [['s3:DeleteObject', `${B}/*`]]],
  ])('%s %s %j', (method, url, headers, expected) => {
    // Act
    const mapped = s3Authorization(method, url, headers);
    // Assess
    expect(typeof mapped).toBe('object');
    expect((mapped as Exclude<typeof mapped, string>).requests.map((r) => [r.action, r.resource])).toEqual(expected);
  });

  it('lists with s3:prefix as the condition context, and checks ListBucket on the key for a missing object', () => {
    // Act
    const list = s3Authorization('GET', '/bkt?list-type=2&prefix=inbox%2Froads%2F&delimiter=%2F', {});
    const get = s3Authorization('GET', '/bkt/inbox/x.geojson', {});
    // Assess
    expect(list).toEqual({ requests: [{ action: 's3:ListBucket', resource: B, context: { 's3:prefix': 'inbox/roads/', 's3:delimiter': '/' } }] });
    expect(get).toMatchObject({ listBucketIfMissing: { action: 's3:ListBucket', resource: B, context: { 's3:prefix': 'inbox/x.geojson' } } });
  });

  it.each([
    ['a browser form POST to a bucket', 'POST', '/bkt'],
    ['POST to an object without a known sub-resource', 'POST', '/bkt/inbox/a.tif'],
    ['an unknown method', 'PATCH', '/bkt/inbox/a.tif'],
    ['a PUT to the service', 'PUT', '/'],
  ])('maps %s to nothing (refused)', (_label, method, url) => {
    expect(typeof s3Authorization(method, url, {})).toBe('string');
  });
});

describe('DynamoDB X-Amz-Target requests -> IAM', () => {
  const T = 'arn:aws:dynamodb:us-east-1:000000000000:table';
  it.each([
    ['GetItem', { TableName: 'ledger', Key: {} }, [['dynamodb:GetItem', `${T}/ledger`]]],
    ['PutItem', { TableName: 'ledger', Item: {} }, [['dynamodb:PutItem', `${T}/ledger`]]],
    ['Query', { TableName: 'ledger', IndexName: 'byStatus' }, [['dynamodb:Query', `${T}/ledger/index/byStatus`]]],
    ['Query', { TableName: 'ledger' }, [['dynamodb:Query', `${T}/ledger`]]],
    ['Scan', { TableName: 'ledger', IndexName: 'bySlotQueue' }, [['dynamodb:Scan', `${T}/ledger/index/bySlotQueue`]]],
    ['ListTables', {}, [['dynamodb:ListTables', '*']]],
    ['DescribeTable', { TableName: `${T}/other` }, [['dynamodb:DescribeTable', `${T}/other`]]],
    ['BatchWriteItem', { RequestItems: { a: [], b: [] } }, [['dynamodb:BatchWriteItem', `${T}/a`], ['dynamodb:BatchWriteItem', `${T}/b`]]],
    [
      'TransactWriteItems',
      { TransactItems: [{ Put: { TableName: 'ledger' } }, { Update: { TableName: 'ledger' } }, { ConditionCheck: { TableName: 'other' } }, { Delete: { TableName: 'ledger' } }] },
      [['dynamodb:PutItem', `${T}/ledger`], ['dynamodb:UpdateItem', `${T}/ledger`], ['dynamodb:ConditionCheckItem', `${T}/other`], ['dynamodb:DeleteItem', `${T}/ledger`]],
    ],
    ['TransactGetItems', { TransactItems: [{ Get: { TableName: 'ledger' } }] }, [['dynamodb:GetItem', `${T}/ledger`]]],
  ])('%s %j', (operation, body, expected) => {
    // Act
    const mapped = jsonAuthorization('dynamodb', `DynamoDB_20120810.${operation}`, JSON.stringify(body));
    // Assess
    expect(Array.isArray(mapped) ? mapped.map((r) => [r.action, r.resource]) : mapped).toEqual(expected);
  });

  it.each([
    ['another service target', 'AWSStepFunctions.StartExecution', '{}'],
    ['no target', undefined, '{}'],
    ['a body that is not JSON', 'DynamoDB_20120810.GetItem', 'not json'],
    ['no table', 'DynamoDB_20120810.GetItem', '{}'],
  ])('refuses %s', (_label, target, body) => {
    expect(typeof jsonAuthorization('dynamodb', target, body)).toBe('string');
  });
});

describe('other JSON-protocol services -> IAM', () => {
  it.each([
    ['secretsmanager', 'secretsmanager.GetSecretValue', { SecretId: 'mapflow/token' }, [['secretsmanager:GetSecretValue', 'arn:aws:secretsmanager:us-east-1:000000000000:secret:mapflow/token']]],
    ['secretsmanager', 'secretsmanager.GetSecretValue', { SecretId: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:t-AbCdEf' }, [['secretsmanager:GetSecretValue', 'arn:aws:secretsmanager:us-east-1:000000000000:secret:t-AbCdEf']]],
    ['states', 'AWSStepFunctions.StartExecution', { stateMachineArn: 'arn:aws:states:us-east-1:000000000000:stateMachine:sm' }, [['states:StartExecution', 'arn:aws:states:us-east-1:000000000000:stateMachine:sm']]],
    ['states', 'AWSStepFunctions.DescribeExecution', { executionArn: 'arn:aws:states:us-east-1:000000000000:execution:sm:j' }, [['states:DescribeExecution', 'arn:aws:states:us-east-1:000000000000:execution:sm:j']]],
    ['states', 'AWSStepFunctions.SendTaskSuccess', { taskToken: 't', output: '{}' }, [['states:SendTaskSuccess', '*']]],
    ['events', 'AWSEvents.PutEvents', { Entries: [{ EventBusName: 'bridge' }, {}] }, [['events:PutEvents', 'arn:aws:events:us-east-1:000000000000:event-bus/bridge'], ['events:PutEvents', 'arn:aws:events:us-east-1:000000000000:event-bus/default']]],
  ] as const)('%s %s %j', (service, target, body, expected) => {
    // Act
    const mapped = jsonAuthorization(service, target, JSON.stringify(body));
    // Assess
    expect(Array.isArray(mapped) ? mapped.map((r) => [r.action, r.resource]) : mapped).toEqual(expected);
  });

  it('takes the resource from the endpoint when it knows better (the state machine of a task token)', () => {
    // Act
    const mapped = jsonAuthorization('states', 'AWSStepFunctions.SendTaskSuccess', '{"taskToken":"t"}', { resourceOf: () => ['arn:aws:states:us-east-1:000000000000:stateMachine:sm'] });
    // Assess
    expect(mapped).toEqual([{ action: 'states:SendTaskSuccess', resource: 'arn:aws:states:us-east-1:000000000000:stateMachine:sm' }]);
  });
});
