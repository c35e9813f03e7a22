/**
 * The catalogue of Lambda handlers: which Task state of the state machine runs
 * which handler. The CDK construct makes one function per entry (least
 * privilege per function) and the local engine binds each Task state to the
 * same handler in process, so the two can never drift apart.
 *
 * Every Task receives the whole state as its payload (it is small: ids and S3
 * pointers, never results) and its output is merged at `resultPath`.
 */
export interface TaskEntry {
  /** Exact Task state name in the state machine. */
  readonly state: string;
  /** Short function id, also the handler file name under functions/handlers/. */
  readonly fn: HandlerName;
  /** Where the Task's result is written in the state (`$` replaces the state). */
  readonly resultPath: string;
  /**
   * `.waitForTaskToken`: the state sleeps until SendTaskSuccess of its token
   * (admission); the handler gets `{job, part, taskToken, executionArn}`.
   */
  readonly waitsForToken?: boolean;
}

export type HandlerName =
  | 'register-job'
  | 'inspect-geotiff'
  | 'ensure-mosaic'
  | 'upload-image'
  | 'plan-processing'
  | 'admit-job'
  | 'acquire-slot'
  | 'wait-for-slot'
  | 'create-processing'
  | 'poll-processing'
  | 'restart-processing'
  | 'store-results'
  | 'finish-part'
  | 'finish-job'
  | 'fail-job'
  | 'release-job-slots';

/** Handlers that are not state machine tasks. */
export type ServiceHandlerName = 'dispatch' | 'reconcile';

/** Every Lambda of the bridge, task or service. */
export type BridgeFunctionName = HandlerName | ServiceHandlerName;

export const TASKS: readonly TaskEntry[] = [
  { state: 'Register Job', fn: 'register-job', resultPath: '$.job' },
  { state: 'Inspect GeoTIFF', fn: 'inspect-geotiff', resultPath: '$.image' },
  { state: 'Ensure Mosaic', fn: 'ensure-mosaic', resultPath: '$.mosaic' },
  { state: 'Upload Image', fn: 'upload-image', resultPath: '$.upload' },
  { state: 'Plan Processing', fn: 'plan-processing', resultPath: '$.plan' },
  // Before the Map opens: a job waits for its first slot without an open Map Run.
  { state: 'Admit Job', fn: 'admit-job', resultPath: '$.admission', waitsForToken: true },
  // Inside the "Process Parts" Map iterator (one iteration per processing):
  { state: 'Acquire Slot', fn: 'acquire-slot', resultPath: '$.slot' },
  { state: 'Wait For Slot', fn: 'wait-for-slot', resultPath: '$.slot', waitsForToken: true },
  { state: 'Create Processing', fn: 'create-processing', resultPath: '$.processing' },
  { state: 'Poll Processing', fn: 'poll-processing', resultPath: '$.poll' },
  { state: 'Restart Processing', fn: 'restart-processing', resultPath: '$.restart' },
  { state: 'Store Results', fn: 'store-results', resultPath: '$.results' },
  { state: 'Finish Part', fn: 'finish-part', resultPath: '$' },
  // Back at the top level:
  { state: 'Finish Job', fn: 'finish-job', resultPath: '$.finish' },
  { state: 'Fail Job', fn: 'fail-job', resultPath: '$.finish' },
  // After Fail Job (also when it failed): frees the job's slots and hands them on.
  { state: 'Release Job Slots', fn: 'release-job-slots', resultPath: '$.released' },
] as const;

export const HANDLER_NAMES: readonly BridgeFunctionName[] = [
  ...TASKS.map((t) => t.fn),
  'dispatch',
  'reconcile',
];
