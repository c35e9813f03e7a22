/**
 * Turning errors into what the user reads: a JobError with a code and a
 * message that says what to fix, from a caught Step Functions error, a thrown
 * error, or a Mapflow processing's messages.
 */
import { BridgeError, InputRejected, REJECTION_CODES, parseCodedMessage } from '../core/errors.ts';
import type { JobError } from '../core/model.ts';
import type { TaskError } from './workflow.ts';
import { HOW_TO_RETRY } from './retry-advice.ts';

export { HOW_TO_RETRY };

/** Codes this package rejects with beyond the shared REJECTION_CODES. */
/** True when a code means "the input cannot be processed" (the job ends REJECTED). */
export function isRejectionCode(code: string | undefined): boolean {
  if (!code) return false;
  return (REJECTION_CODES as readonly string[]).includes(code);
}

const HINTS: Record<string, string> = {
  MapflowUnavailable: `Mapflow did not answer after several retries; once it answers, ${HOW_TO_RETRY}.`,
  MapflowRateLimited: `Mapflow kept asking to slow down; lower MAX_CONCURRENT_PROCESSINGS, and ${HOW_TO_RETRY}.`,
  MapflowOutcomeUnknown: `a request to Mapflow was sent but its answer was lost; check the Mapflow project for a duplicate, then ${HOW_TO_RETRY}.`,
  MapflowAuthError: `Mapflow refused the credentials; check the Mapflow token (the secret on AWS; --token locally), then ${HOW_TO_RETRY}.`,
  // A 403 without an authentication code: the token works, the resource or the right is not this account's.
  MapflowForbidden: `Mapflow accepted the token but does not let this account do this (403): the project, mosaic or image is another account's, or shared without that right. Check the route's project and mosaicName, or ask the owner for access, then ${HOW_TO_RETRY}.`,
  QueueTimeout: `no processing slot became free in time; raise MAX_CONCURRENT_PROCESSINGS, and ${HOW_TO_RETRY}.`,
  ConfigurationError: `fix the bridge configuration, then ${HOW_TO_RETRY}.`,
  'States.Timeout': `a step took too long; ${HOW_TO_RETRY}.`,
  // The Process Parts Map Run failed (issue 37 point 2): a part's child execution failed where none of its own
  // steps could record it (Finish Part kept failing, or an error no Catch takes: States.Runtime, a Processing
  // Outcome with no matching branch, States.DataLimitExceeded), and Step Functions stopped the other parts.
  'States.ExceedToleratedFailureThreshold': `a part's workflow failed before it could record its own outcome, and the other parts were stopped: \`mapflow-bridge jobs show <jobId>\` lists the parts that recorded one (the failed part is among those without), and on AWS the Map Run of Process Parts lists its child executions with their errors; processings already created keep their results in Mapflow. Report it if it repeats; ${HOW_TO_RETRY}.`,
  // A Lambda stopped at its Timeout. A decode of the input that runs out of time is REJECTED INPUT_TOO_COMPLEX before
  // this (functions/core/deadline.ts), so what is left is time spent waiting on Mapflow or S3, or storing a result.
  'Sandbox.Timedout': `a step ran past its function's Timeout, waiting on Mapflow or S3 or storing a large result (a processing that ran keeps its results in Mapflow); once they answer quickly, ${HOW_TO_RETRY}.`,
};

/**
 * Reads the error Step Functions caught. Never throws: a missing or odd shape
 * gives a generic INTERNAL_ERROR rather than losing the job's final state.
 */
export function jobErrorFromTaskError(error: unknown): { error: JobError; rejected: boolean } {
  const task = (error && typeof error === 'object' ? error : {}) as Partial<TaskError> & Record<string, unknown>;
  const errorType = typeof task.Error === 'string' && task.Error ? task.Error : undefined;
  let message: string | undefined;
  let causeType: string | undefined;
  if (typeof task.Cause === 'string' && task.Cause) {
    try {
      const cause = JSON.parse(task.Cause) as unknown;
      if (cause && typeof cause === 'object') {
        const c = cause as Record<string, unknown>;
        if (typeof c.errorMessage === 'string') message = c.errorMessage;
        if (typeof c.errorType === 'string') causeType = c.errorType;
      } else if (typeof cause === 'string') {
        message = cause;
      }
    } catch {
      message = task.Cause;
      // Step Functions' Lambda.Unknown: "The cause could not be determined because Lambda did not return an
      // error type. Returned payload: {...}": the payload says what happened, in the runtime's own words.
      const payload = /Returned payload: (\{[\s\S]*\})\s*$/.exec(task.Cause)?.[1];
      if (payload) {
        try {
          const returned = JSON.parse(payload) as Record<string, unknown>;
          if (typeof returned.errorMessage === 'string' && returned.errorMessage) message = returned.errorMessage;
          if (typeof returned.errorType === 'string' && returned.errorType) causeType = returned.errorType;
        } catch {
          // Not JSON after all: the whole cause stays the message.
        }
      }
    }
  }
  const type = knownTypeOfUnknown(errorType ?? causeType ?? 'INTERNAL_ERROR', message, causeType);
  if (type === 'InputRejected' || causeType === 'InputRejected') {
    const { code, text } = parseCodedMessage(message ?? '');
    return { error: { code: code ?? 'INPUT_REJECTED', message: text || 'the input was rejected' }, rejected: true };
  }
  const hint = HINTS[type];
  const text = message ? (hint ? `${message} (${hint})` : message) : (hint ?? `the step failed with ${type}`);
  const code = message ? (parseCodedMessage(message).code ?? codeFor(type)) : codeFor(type);
  return { error: { code, message: text }, rejected: false };
}

/**
 * What a `Lambda.Unknown` stands for, read from its cause. Step Functions
 * reports unhandled Lambda errors as Lambda.Unknown, "out-of-memory errors and
 * function timeouts" among them (Step Functions developer guide, "Handle
 * Lambda service exceptions"), where Lambda's own runtime names them
 * Runtime.OutOfMemory and Sandbox.Timedout, and the local runtime does too.
 * Both names reach the bridge, so one outcome follows either: a cause that
 * says the function ran out of time is a timeout, one that says it ran out of
 * memory or was killed by signal is an out-of-memory; any other
 * Lambda.Unknown stays what it is.
 */
function knownTypeOfUnknown(type: string, message: string | undefined, payloadType?: string): string {
  if (type !== 'Lambda.Unknown') return type;
  // The returned payload names it (an out-of-memory does: {"errorType":"Runtime.OutOfMemory",...}).
  if (payloadType === 'Runtime.OutOfMemory' || payloadType === 'Sandbox.Timedout') return payloadType;
  if (!message) return type;
  if (/\btimed out after\b|\bTask timed out\b/i.test(message)) return 'Sandbox.Timedout';
  if (/out of memory|OutOfMemory|signal: (killed|SIGKILL)\b/i.test(message)) return 'Runtime.OutOfMemory';
  return type;
}

/** The same, for an error caught in process. */
export function jobErrorFromThrown(err: unknown): { error: JobError; rejected: boolean } {
  if (err instanceof InputRejected) return { error: { code: err.code, message: parseCodedMessage(err.message).text }, rejected: true };
  if (err instanceof BridgeError) return { error: { code: err.code, message: err.message }, rejected: false };
  const e = err as { name?: string; message?: string };
  return jobErrorFromTaskError({ Error: e?.name ?? 'Error', Cause: JSON.stringify({ errorType: e?.name, errorMessage: e?.message ?? String(err) }) });
}

function codeFor(errorType: string): string {
  return errorType
    .replace(/^States\./, 'STATES_')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9_]/g, '_')
    .toUpperCase();
}

export interface MapflowMessage {
  code: string;
  parameters?: Record<string, string>;
}

/**
 * Mapflow's source-validator codes about the uploaded image itself (spec,
 * "Error codes"; mapflow-docs-en source/api/_static/csv/errors.csv) and the
 * rejection each is: the bridge leaves what the sources do not settle (a
 * uint16 image, a model without a known pixel-size range) to Mapflow's
 * validator (functions/geotiff/checks.ts), and its answer ends the job
 * REJECTED with the code the bridge's own check would have given.
 */
const IMAGE_VALIDATOR_REJECTIONS: Record<string, { code: string; fix: string }> = {
  'source-validator.DtypeNotAllowed': { code: 'UNSUPPORTED_DATA_TYPE', fix: 'convert it to 8-bit (e.g. gdal_translate -ot Byte -scale in.tif out.tif)' },
  'source-validator.NChannelsNotAllowed': { code: 'UNSUPPORTED_BANDS', fix: 'keep the RGB bands, or one band (e.g. gdal_translate -b 1 -b 2 -b 3 in.tif out.tif)' },
  'source-validator.PixelSizeTooHigh': { code: 'PIXEL_SIZE_TOO_COARSE', fix: 'use sharper imagery, or a route whose model works at this resolution' },
  'source-validator.PixelSizeTooLow': { code: 'PIXEL_SIZE_TOO_FINE', fix: 'resample the image to the model\'s resolution (e.g. gdalwarp -tr 0.5 0.5 in.tif out.tif)' },
};

/**
 * A failed processing's messages, turned into a JobError that says what happened.
 * @param options.image the processing ran on the job's uploaded image: a failure that is only about the
 *   image (IMAGE_VALIDATOR_REJECTIONS) is a rejection of the input, not a failure to retry
 */
export function jobErrorFromMapflow(status: string, messages: MapflowMessage[] | undefined, outcome: 'FAILED' | 'TIMEOUT', options: { image?: boolean } = {}): JobError {
  const list = messages ?? [];
  const errors = list.filter((m) => (m.parameters?.level ?? 'error') === 'error');
  if (options.image && outcome === 'FAILED' && status === 'FAILED' && errors.length > 0 && errors.every((m) => m.code in IMAGE_VALIDATOR_REJECTIONS)) {
    const first = IMAGE_VALIDATOR_REJECTIONS[errors[0]!.code]!;
    const fixes = [...new Set(errors.map((m) => IMAGE_VALIDATOR_REJECTIONS[m.code]!.fix))].join('; ');
    return {
      code: first.code,
      message: `Mapflow's validator refused the image for the model: ${list.map(describeMapflowMessage).join('; ')}. To fix: ${fixes}; then drop it again under a new name.`,
      mapflowMessages: list,
    };
  }
  if (outcome === 'TIMEOUT') {
    return {
      code: 'PROCESSING_TIMEOUT',
      message: `Mapflow had not finished the processing (status ${status}) when the bridge stopped waiting; check it in Mapflow, or raise POLL_POLICY maxPolls/maxJobSeconds; then ${HOW_TO_RETRY}.`,
      ...(list.length > 0 && { mapflowMessages: list }),
    };
  }
  const described = list.map(describeMapflowMessage).join('; ');
  const what = status === 'FAILED' ? 'Mapflow could not process the area' : `Mapflow ended the processing as ${status}`;
  return {
    code: status === 'FAILED' ? 'PROCESSING_FAILED' : `PROCESSING_${status}`,
    message: `${described ? `${what}: ${described}` : `${what} without giving a reason`}. Try another imagery source or zoom, or wait a while; then ${HOW_TO_RETRY}.`,
    ...(list.length > 0 && { mapflowMessages: list }),
  };
}

const MESSAGE_HINTS: Record<string, string> = {
  'source-validator.PixelSizeTooHigh': 'the imagery is too coarse for the model; use finer imagery (smaller pixel size)',
  'source-validator.PixelSizeTooLow': 'the imagery is finer than the model takes; use a coarser zoom or resample the image',
  'source-validator.NoDataInAOI': 'the imagery source has no data over the area; choose another source or area',
  'source-validator.TooHighZoom': 'the zoom is above what the model takes; lower the route\'s zoom',
  'source-validator.TooLowZoom': 'the zoom is below what the model takes; raise the route\'s zoom',
  'source-validator.DtypeNotAllowed': 'the image data type is not one the model takes',
  'source-validator.NChannelsNotAllowed': 'the image band count is not one the model takes',
  'geometry.Invalid': 'the area geometry is invalid; fix the polygons',
  'dataloader.MemoryLimitExceeded': 'the area is too large to load at once; split it into smaller polygons',
};

export function describeMapflowMessage(m: MapflowMessage): string {
  const params = Object.entries(m.parameters ?? {})
    .filter(([k]) => k !== 'level')
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const hint = MESSAGE_HINTS[m.code];
  return `${m.code}${params ? ` (${params})` : ''}${hint ? `: ${hint}` : ''}`;
}
