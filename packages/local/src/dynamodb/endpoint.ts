/**
 * A DynamoDB endpoint given by the user (`--dynamodb-endpoint`, or
 * LocalBridgeOptions.dynamodbEndpoint), checked before any request goes to
 * it. No imports: the CLI checks its arguments before it loads the bridge.
 */
export function validDynamoDbEndpoint(endpoint: string): string {
  let url: URL | undefined;
  try {
    url = new URL(endpoint);
  } catch {
    // reported below
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || (url.pathname !== '/' && url.pathname !== '')) {
    throw new Error(`the DynamoDB endpoint must be an http(s) URL without credentials or path, such as http://127.0.0.1:8000; got ${JSON.stringify(endpoint)}`);
  }
  return url.origin;
}
