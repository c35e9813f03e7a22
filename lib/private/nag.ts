/**
 * cdk-nag (AwsSolutions) acknowledgements of the bridge, each with its reason.
 *
 * cdk-nag 3 matches acknowledgements by exact finding id, and IAM5 finding ids
 * embed CloudFormation logical ids (`AwsSolutions-IAM5[Resource::<BridgeBucket1234.Arn>/inbox/*]`).
 * Rather than hard-coding logical ids, an aspect runs the AwsSolutions pack on
 * the bridge at synth time and acknowledges only the findings that match one
 * of the narrow patterns below, on the resource that raised them. Anything
 * else (a new wildcard, an unencrypted resource...) is left for the pack
 * registered on the app to report.
 */
import { Aspects, Validations, type IAspect } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';

export interface NagAcknowledgement {
  /** Rule, e.g. 'AwsSolutions-IAM5'. */
  readonly rule: string;
  /** The bracketed finding of the rule (IAM5's `Resource::...`), when it has one. */
  readonly finding?: RegExp;
  /** Construct paths (relative to the bridge) the acknowledgement applies to. */
  readonly paths: RegExp;
  readonly reason: string;
}

/** Every acknowledged finding, with the reason (also listed in docs/deploy.md). */
export function bridgeNagAcknowledgements(prefixes: readonly string[]): NagAcknowledgement[] {
  const prefixAlternatives = prefixes.map((p) => escapeRegExp(p)).join('|');
  return [
    {
      rule: 'AwsSolutions-SMG4',
      paths: /^MapflowSecret\//,
      reason:
        'The Mapflow API token is issued by Mapflow and cannot be rotated by a rotation Lambda; an operator replaces it with put-secret-value when Mapflow issues a new one.',
    },
    {
      rule: 'AwsSolutions-IAM5',
      finding: /^Resource::\*$/,
      paths: /^([A-Za-z]+Function\/Role|Workflow\/StateMachine\/Role)\/DefaultPolicy\//,
      reason:
        'Only actions without resource-level permissions use Resource "*": X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) and, on the state machine role, the CloudWatch Logs log-delivery actions Step Functions logging requires.',
    },
    {
      rule: 'AwsSolutions-IAM5',
      finding: new RegExp(`^Resource::(<[A-Za-z0-9]+\\.Arn>|arn:[^*]+)/(${prefixAlternatives})\\*$`),
      paths: /^[A-Za-z]+Function\/Role\/DefaultPolicy\//,
      reason:
        'Object-level S3 actions on one prefix of the bridge bucket (inbox/, work/, results/ or failed/): object keys are only known at run time. The actions are explicit (no s3:* or Get*).',
    },
    {
      rule: 'AwsSolutions-IAM5',
      finding: /^Resource::(<[A-Za-z0-9]+\.Arn>|arn:[^*]+)\/index\/\*$/,
      paths: /^[A-Za-z]+Function\/Role\/DefaultPolicy\//,
      reason: "Query on the ledger table's own GSIs (byStatus, byProcessingId, bySlotQueue); the actions are explicit read/write item actions.",
    },
    {
      rule: 'AwsSolutions-IAM5',
      finding: /^Resource::<[A-Za-z0-9]+Function[A-Za-z0-9]*\.Arn>:\*$/,
      paths: /^Workflow\/StateMachine\/Role\/DefaultPolicy\//,
      reason:
        "lambda:InvokeFunction on the versions and aliases (<function ARN>:*) of the bridge's own task functions, as granted by the LambdaInvoke task.",
    },
    {
      rule: 'AwsSolutions-IAM5',
      finding: /^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:stateMachine:\*$/,
      paths: /^[A-Za-z]+Function\/Role\/DefaultPolicy\//,
      reason:
        "states:SendTaskSuccess only (admission hands a freed slot to a waiting task token): the state machine refers to these functions, so naming its ARN here would be a dependency cycle; the action alone cannot start, stop or read executions.",
    },
    {
      rule: 'AwsSolutions-IAM5',
      // `<machine>:*`: its executions; `<machine>/*`: its Map Runs' child executions (<machine>/<label>:<id>).
      finding: /^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:.*[:/]\*$/,
      paths: /^(Workflow\/StateMachine\/DistributedMapPolicy|ReconcileFunction\/Role\/DefaultPolicy)\//,
      reason:
        "Executions are named by job id at run time: the Distributed Map's child executions and the reconciler's DescribeExecution (of executions and of Map Run children) are limited to executions of the bridge's own state machine.",
    },
  ];
}

/**
 * Adds the aspect that acknowledges the matching findings under `scope`.
 * @param prefixes the S3 prefixes the functions are granted access under
 */
export function acknowledgeBridgeNagFindings(scope: IConstruct, prefixes: readonly string[]): void {
  Aspects.of(scope).add(new AcknowledgeNagFindings(scope, bridgeNagAcknowledgements(prefixes)));
}

class AcknowledgeNagFindings implements IAspect {
  private done = false;

  constructor(
    private readonly root: IConstruct,
    private readonly acknowledgements: readonly NagAcknowledgement[],
  ) {}

  visit(node: IConstruct): void {
    if (node !== this.root || this.done) return;
    this.done = true;
    const report = new AwsSolutionsChecks(this.root).validateScope(this.root);
    const byPath = new Map(this.root.node.findAll().map((c) => [c.node.path, c]));
    const rootPath = `${this.root.node.path}/`;
    for (const violation of report.violations) {
      const { rule, finding } = splitRuleName(violation.ruleName);
      for (const resource of violation.violatingResources) {
        const path = resource.constructPath ?? '';
        const relativePath = path.startsWith(rootPath) ? path.slice(rootPath.length) : '';
        const match = this.acknowledgements.find(
          (a) =>
            a.rule === rule &&
            a.paths.test(relativePath) &&
            (a.finding === undefined ? finding === undefined : finding !== undefined && a.finding.test(finding)),
        );
        const construct = byPath.get(path);
        if (match && construct) Validations.of(construct).acknowledge({ id: violation.ruleName, reason: match.reason });
      }
    }
  }
}

/** 'AwsSolutions-IAM5[Resource::*]' -> { rule: 'AwsSolutions-IAM5', finding: 'Resource::*' } */
function splitRuleName(ruleName: string): { rule: string; finding?: string } {
  const open = ruleName.indexOf('[');
  if (open < 0 || !ruleName.endsWith(']')) return { rule: ruleName };
  return { rule: ruleName.slice(0, open), finding: ruleName.slice(open + 1, -1) };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
