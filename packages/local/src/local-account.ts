/**
 * The fake AWS account and region of local mode, in one place: every ARN,
 * queue URL and secret ARN the local bridge resolves from a template, the
 * state machine's ARN and the definition's function ARNs use these
 * (`arn:aws:<service>:us-east-1:000000000000:...`).
 */
export const LOCAL_AWS = { partition: 'aws', region: 'us-east-1', account: '000000000000', urlSuffix: 'amazonaws.com' } as const;
