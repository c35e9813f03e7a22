/**
 * The job state machine (Standard, JSONPath only) of docs/architecture.md.
 *
 * State names and result paths come from the task catalogue
 * (functions/core/catalog.ts), which the local engine also reads: it binds
 * each Task to its handler by state name, so names here must never be typed
 * twice. Every Task passes the whole state as its payload (LambdaInvoke with
 * payloadResponseOnly, so the Resource is the plain function ARN) and writes
 * its result at the catalogue's resultPath.
 */
import { Aws, Duration, Fn, RemovalPolicy, Names } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { TASKS, type HandlerName, type TaskEntry } from '../../functions/core/catalog.ts';
import { TRANSIENT_ERRORS, TRANSIENT_RETRY } from './defaults.ts';

/** Names of the non-Task states (Choice, Wait, Map, Succeed, Fail). */
export const WORKFLOW_STATES = {
  alreadyFinal: 'Already Final?',
  done: 'Done',
  whichKind: 'Which Kind?',
  hasModel: 'Has Model?',
  imageReady: 'Image Ready?',
  waitForImage: 'Wait For Image',
  processParts: 'Process Parts',
  admittedPart: 'Admitted Part?',
  slotAcquired: 'Slot Acquired?',
  waitForSlot: 'Wait For Slot',
  processingOutcome: 'Processing Outcome?',
  waitForProcessing: 'Wait For Processing',
  jobFailed: 'Job Failed',
} as const;

export interface BridgeWorkflowProps {
  /** The function of every Task state, by handler name. */
  readonly taskFunctions: Record<HandlerName, lambda.IFunction>;
  /** How many parts of one job run at the same time (the slots bound the account-wide total). */
  readonly maxConcurrency: number;
  /** Step Functions stops an execution after this (the reconciler then settles its ledger row). */
  readonly timeout: Duration;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The state machine and its log group. Logging is ALL with execution data
 * off, so state payloads (which may name inputs) stay out of the logs;
 * X-Ray tracing is on.
 */
export class BridgeWorkflow extends Construct {
  public readonly stateMachine: sfn.StateMachine;
  public readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: BridgeWorkflowProps) {
    super(scope, id);
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      // The /aws/vendedlogs/ prefix keeps the CloudWatch Logs resource policy small. The
      // stack's UUID ends the name: a retained group of a deleted stack never
      // collides with the next deployment's (AlreadyExists).
      logGroupName: `/aws/vendedlogs/states/${Names.uniqueResourceName(this, { maxLength: 200 })}-${Fn.select(2, Fn.split('/', Aws.STACK_ID))}`,
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromChainable(buildJobDefinition(this, props)),
      timeout: props.timeout,
      tracingEnabled: true,
      logs: { destination: this.logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
      comment: 'mapflow-bridge: one execution per job (execution name = job id)',
    });
  }
}

/** Builds the flow of docs/architecture.md. */
export function buildJobDefinition(
  scope: Construct,
  props: Pick<BridgeWorkflowProps, 'taskFunctions' | 'maxConcurrency'> & { timeout?: Duration },
): sfn.IChainable {
  const task = (fn: HandlerName, payload?: sfn.TaskInput): tasks.LambdaInvoke => {
    const entry = taskEntry(fn);
    const invoke = new tasks.LambdaInvoke(scope, entry.state, {
      lambdaFunction: props.taskFunctions[fn],
      payloadResponseOnly: true,
      // Our own Retry below covers the Lambda service errors too (with jitter).
      retryOnServiceExceptions: false,
      payload,
      resultPath: entry.resultPath,
    });
    return withTransientRetry(invoke);
  };
  const catchAll = { errors: [sfn.Errors.ALL], resultPath: '$.error' };
  // Admission (docs/architecture.md): the execution sleeps on its task token,
  // no polling, until a released slot is handed to it (SendTaskSuccess).
  const tokenTask = (fn: HandlerName, part: sfn.TaskInput['value']): tasks.LambdaInvoke => {
    const entry = taskEntry(fn);
    const invoke = new tasks.LambdaInvoke(scope, entry.state, {
      lambdaFunction: props.taskFunctions[fn],
      integrationPattern: sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
      payload: sfn.TaskInput.fromObject({
        job: sfn.JsonPath.objectAt('$.job'),
        part,
        taskToken: sfn.JsonPath.taskToken,
        // Inside the Distributed Map this is the part's child execution
        // (execution:<machine>/<map run label>:<id>), not the job's: Wait For Slot
        // records the job's own ARN ($.job.executionArn) and keeps this one as a
        // fallback (docs/architecture.md, "Whose execution holds a slot").
        executionArn: sfn.JsonPath.executionId,
      }),
      // A waiter never waits longer than a job may run (then QueueTimeout semantics: the part fails).
      taskTimeout: sfn.Timeout.duration(props.timeout ?? Duration.hours(24)),
      retryOnServiceExceptions: false,
      resultPath: entry.resultPath,
    });
    return withTransientRetry(invoke);
  };

  // ---- Top level: failure path
  const failJob = task('fail-job');
  const releaseJobSlots = task('release-job-slots');
  // The job's slots go back even when Fail Job itself failed for good (its error is kept apart).
  failJob.addCatch(releaseJobSlots, { errors: [sfn.Errors.ALL], resultPath: '$.failJobError' });
  failJob.next(releaseJobSlots);
  releaseJobSlots.next(new sfn.Fail(scope, WORKFLOW_STATES.jobFailed, {
    error: 'JobFailed',
    cause: 'The job failed or was rejected: see its ledger row and failed/<path>/report.json',
  }));

  // ---- One part (an item of the Process Parts Map)
  const acquireSlot = task('acquire-slot');
  const waitForSlot = tokenTask('wait-for-slot', { index: sfn.JsonPath.numberAt('$.part.index') });
  const createProcessing = task('create-processing');
  const pollProcessing = task('poll-processing');
  const waitForProcessing = new sfn.Wait(scope, WORKFLOW_STATES.waitForProcessing, {
    time: sfn.WaitTime.secondsPath('$.poll.waitSeconds'),
  });
  const restartProcessing = task('restart-processing');
  const storeResults = task('store-results');
  const finishPart = task('finish-part');
  for (const partTask of [acquireSlot, waitForSlot, createProcessing, pollProcessing, restartProcessing, storeResults]) {
    partTask.addCatch(finishPart, catchAll);
  }

  acquireSlot.next(
    new sfn.Choice(scope, WORKFLOW_STATES.slotAcquired)
      .when(sfn.Condition.booleanEquals('$.slot.acquired', true), createProcessing)
      .otherwise(waitForSlot.next(createProcessing)),
  );
  // The part Admit Job took the slot for goes straight to Create Processing: its slot is
  // held, and an Acquire Slot call there would only find it (a Lambda call and a state
  // transition inside every slot's hold time).
  const partDefinition = new sfn.Choice(scope, WORKFLOW_STATES.admittedPart)
    .when(sfn.Condition.numberEqualsJsonPath('$.part.index', '$.admittedIndex'), createProcessing)
    .otherwise(acquireSlot);
  createProcessing.next(pollProcessing);
  pollProcessing.next(
    new sfn.Choice(scope, WORKFLOW_STATES.processingOutcome)
      .when(sfn.Condition.stringEquals('$.poll.outcome', 'WAIT'), waitForProcessing.next(pollProcessing))
      .when(sfn.Condition.stringEquals('$.poll.outcome', 'RESTART'), restartProcessing.next(waitForProcessing))
      .when(sfn.Condition.stringEquals('$.poll.outcome', 'OK'), storeResults.next(finishPart))
      // A FAILED processing's partial results are kept under failed/ (store-results.ts storePartialResults).
      .when(sfn.Condition.stringEquals('$.poll.outcome', 'FAILED'), storeResults)
      .when(sfn.Condition.stringEquals('$.poll.outcome', 'TIMEOUT'), finishPart),
    // No default on purpose: an unknown outcome is a bug; it fails the part's
    // execution, the Map, and the top-level Catch runs Fail Job.
  );

  // DISTRIBUTED: every part runs as a child execution with its own history, so
  // a job with many parts, each polling up to maxPolls times, never nears the
  // 25,000 history events of one execution. The local engine runs the same
  // ItemProcessor inline.
  const processParts = new sfn.DistributedMap(scope, WORKFLOW_STATES.processParts, {
    itemsPath: '$.plan.parts',
    itemSelector: {
      job: sfn.JsonPath.objectAt('$.job'),
      part: sfn.JsonPath.objectAt('$$.Map.Item.Value'),
      // The part whose slot Admit Job holds (the same path Admit Job names).
      admittedIndex: sfn.JsonPath.numberAt('$.plan.parts[0].index'),
    },
    maxConcurrency: props.maxConcurrency,
    mapExecutionType: sfn.StateMachineType.STANDARD,
    // Each part's outcome in brief (PartOutcome): the full ones are in the ledger, where Finish Job reads
    // them; 100 full outcomes could cross the 256 KiB a state may hold (issue 37 point 3).
    resultPath: '$.partOutcomes',
  });
  processParts.itemProcessor(partDefinition);

  // ---- Top level: main path
  // Register Job also receives the execution ARN (stored in the ledger for the reconciler).
  const registerJob = task(
    'register-job',
    sfn.TaskInput.fromObject({
      jobId: sfn.JsonPath.stringAt('$.jobId'),
      input: sfn.JsonPath.objectAt('$.input'),
      executionArn: sfn.JsonPath.executionId,
    }),
  );
  const inspectGeoTiff = task('inspect-geotiff');
  const ensureMosaic = task('ensure-mosaic');
  const uploadImage = task('upload-image');
  const planProcessing = task('plan-processing');
  const finishJob = task('finish-job');
  // Admission before the Map Run opens (issue: 1,000 open Map Runs per account):
  // the job's first part takes its slot here, FIFO, asleep on a task token.
  const admitJob = tokenTask('admit-job', { index: sfn.JsonPath.numberAt('$.plan.parts[0].index') });
  for (const topTask of [registerJob, inspectGeoTiff, ensureMosaic, uploadImage, planProcessing, admitJob, finishJob]) {
    topTask.addCatch(failJob, catchAll);
  }
  processParts.addCatch(failJob, catchAll);

  const planAndProcess = planProcessing.next(admitJob).next(processParts).next(finishJob);
  // Mapflow preprocesses an uploaded image before it can be used: Upload Image
  // answers ready=false with a wait until the image is COMPLETED, and runs
  // again after the wait (it then only looks at the image's status).
  const hasModel = new sfn.Choice(scope, WORKFLOW_STATES.hasModel)
    .when(sfn.Condition.booleanEquals('$.job.processImages', true), planProcessing)
    .otherwise(finishJob);
  const waitForImage = new sfn.Wait(scope, WORKFLOW_STATES.waitForImage, { time: sfn.WaitTime.secondsPath('$.upload.waitSeconds') });
  const geotiff = inspectGeoTiff
    .next(ensureMosaic)
    .next(uploadImage)
    .next(
      new sfn.Choice(scope, WORKFLOW_STATES.imageReady)
        .when(sfn.Condition.booleanEquals('$.upload.ready', false), waitForImage.next(uploadImage))
        .otherwise(hasModel),
    );

  return registerJob.next(
    new sfn.Choice(scope, WORKFLOW_STATES.alreadyFinal)
      .when(sfn.Condition.booleanEquals('$.job.alreadyFinal', true), new sfn.Succeed(scope, WORKFLOW_STATES.done))
      .otherwise(
        new sfn.Choice(scope, WORKFLOW_STATES.whichKind)
          .when(sfn.Condition.stringEquals('$.job.kind', 'geotiff'), geotiff)
          .otherwise(planAndProcess),
      ),
  );
}

function taskEntry(fn: HandlerName): TaskEntry {
  const entry = TASKS.find((t) => t.fn === fn);
  if (!entry) throw new Error(`No catalogue entry for handler ${fn}`);
  return entry;
}

/** Our own Retry on the transient errors (the Lambda service errors too), with full jitter. */
function withTransientRetry(invoke: tasks.LambdaInvoke): tasks.LambdaInvoke {
  invoke.addRetry({
    errors: [...TRANSIENT_ERRORS],
    interval: TRANSIENT_RETRY.interval,
    maxAttempts: TRANSIENT_RETRY.maxAttempts,
    backoffRate: TRANSIENT_RETRY.backoffRate,
    maxDelay: TRANSIENT_RETRY.maxDelay,
    jitterStrategy: sfn.JitterType.FULL,
  });
  return invoke;
}
