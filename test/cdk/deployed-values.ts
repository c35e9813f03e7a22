/**
 * What a synthesized template turns into once CloudFormation has deployed it,
 * without AWS: every Ref / Fn::GetAtt is replaced by a value of the shape the
 * real service returns (a table name, a bucket ARN, a state machine ARN...),
 * so the tests can feed function environments to the runtime's own parser and
 * check IAM statements against the concrete ARNs the code will call.
 *
 * Also a small IAM evaluator (Allow statements, `*` / `?` wildcards in actions
 * and resources, no conditions) for "does this role allow that call".
 */
import type { PolicyStatement } from './support.ts';

export const REGION = 'eu-west-1';
export const ACCOUNT = '123456789012';

interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
}
export interface TemplateJson {
  Resources: Record<string, TemplateResource>;
}

/** Deployed names and ARNs of a template's resources, the way CloudFormation derives them. */
export class DeployedValues {
  constructor(private readonly template: TemplateJson) {}

  /** A deterministic physical name: `Stack-<logicalId>-ABC123` (lowercase where the service requires it). */
  physicalName(logicalId: string): string {
    const resource = this.resource(logicalId);
    const explicit = resource.Properties?.[NAME_PROPERTY[resource.Type] ?? ''];
    if (typeof explicit === 'string') return explicit;
    const name = `Test-${logicalId.slice(0, 40)}-ABC123DEF`;
    return resource.Type === 'AWS::S3::Bucket' ? name.toLowerCase() : name;
  }

  ref(logicalId: string): string {
    const pseudo = PSEUDO[logicalId];
    if (pseudo !== undefined) return pseudo;
    const { Type } = this.resource(logicalId);
    const name = this.physicalName(logicalId);
    switch (Type) {
      // Ref returns the ARN for these types.
      case 'AWS::SecretsManager::Secret':
        return `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}-AbCdEf`;
      case 'AWS::StepFunctions::StateMachine':
        return `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${name}`;
      case 'AWS::SQS::Queue':
        return `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`;
      case 'AWS::IAM::Policy':
        return name;
      default:
        return name;
    }
  }

  getAtt(logicalId: string, attribute: string): string {
    const { Type } = this.resource(logicalId);
    const name = this.physicalName(logicalId);
    if (attribute === 'Arn') {
      switch (Type) {
        case 'AWS::DynamoDB::Table':
          return `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}`;
        case 'AWS::S3::Bucket':
          return `arn:aws:s3:::${name}`;
        case 'AWS::Events::EventBus':
          return `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${name}`;
        case 'AWS::Events::Rule':
          return `arn:aws:events:${REGION}:${ACCOUNT}:rule/${name}`;
        case 'AWS::SQS::Queue':
          return `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`;
        case 'AWS::Logs::LogGroup':
          return `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:${name}:*`;
        case 'AWS::Lambda::Function':
          return `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${name}`;
        case 'AWS::IAM::Role':
          return `arn:aws:iam::${ACCOUNT}:role/${name}`;
        case 'AWS::KMS::Key':
          return `arn:aws:kms:${REGION}:${ACCOUNT}:key/${logicalId.toLowerCase()}`;
      }
    }
    if (attribute === 'Name' || attribute === 'QueueName') return name;
    throw new Error(`DeployedValues: no model of Fn::GetAtt ${Type}.${attribute}`);
  }

  /** Resolves intrinsics in any value; Fn::If and unknown functions are refused (the test must know them). */
  resolve(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.resolve(v)).filter((v) => v !== NO_VALUE);
    if (value === null || typeof value !== 'object') return value;
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 1) {
      const [fn, arg] = entries[0]!;
      switch (fn) {
        case 'Ref':
          return arg === 'AWS::NoValue' ? NO_VALUE : this.ref(arg as string);
        case 'Fn::GetAtt': {
          const [id, attribute] = Array.isArray(arg) ? (arg as string[]) : String(arg).split('.');
          return this.getAtt(id!, attribute!);
        }
        case 'Fn::Join': {
          const [separator, parts] = arg as [string, unknown[]];
          return (this.resolve(parts) as unknown[]).map(String).join(separator);
        }
        case 'Fn::Split': {
          const [separator, source] = arg as [string, unknown];
          return String(this.resolve(source)).split(separator);
        }
        case 'Fn::Select': {
          const [index, list] = arg as [number | string, unknown];
          return (this.resolve(list) as unknown[])[Number(index)];
        }
        case 'Fn::Sub':
          if (typeof arg === 'string') return arg.replace(/\$\{([^}!]+)\}/g, (_m, id: string) => this.ref(id));
          break;
      }
      if (fn.startsWith('Fn::')) throw new Error(`DeployedValues: intrinsic ${fn} is not modelled`);
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, this.resolve(v)]).filter(([, v]) => v !== NO_VALUE));
  }

  private resource(logicalId: string): TemplateResource {
    const resource = this.template.Resources[logicalId];
    if (!resource) throw new Error(`DeployedValues: no resource ${logicalId}`);
    return resource;
  }
}

const NO_VALUE = Symbol('AWS::NoValue');

const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': REGION,
  'AWS::AccountId': ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'Test',
};

/** Properties that set a physical name explicitly. */
const NAME_PROPERTY: Record<string, string> = {
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::S3::Bucket': 'BucketName',
  'AWS::Events::EventBus': 'Name',
  'AWS::StepFunctions::StateMachine': 'StateMachineName',
  'AWS::Lambda::Function': 'FunctionName',
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::SecretsManager::Secret': 'Name',
  'AWS::SQS::Queue': 'QueueName',
};

/** IAM's wildcard matching: `*` any run of characters (also ':' and '/'), `?` one character, case-sensitive. */
export function iamPatternMatches(pattern: string, value: string, caseInsensitive = false): boolean {
  const regex = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\/]/g, '\\$&')))
    .join('');
  return new RegExp(`^${regex}$`, caseInsensitive ? 'si' : 's').test(value);
}

/** True when some Allow statement (resolved to concrete strings) grants `action` on `resourceArn`. */
export function isAllowed(statements: readonly PolicyStatement[], action: string, resourceArn: string): boolean {
  return statements.some((s) => {
    if (s.Effect !== 'Allow' || s.Condition !== undefined) return false;
    const actions = Array.isArray(s.Action) ? s.Action : [s.Action];
    const resources = (Array.isArray(s.Resource) ? s.Resource : [s.Resource]) as unknown[];
    // Action names are case-insensitive in IAM; resource ARNs are not.
    return (
      actions.some((a) => iamPatternMatches(a, action, true)) &&
      resources.some((r) => typeof r === 'string' && iamPatternMatches(r, resourceArn))
    );
  });
}
