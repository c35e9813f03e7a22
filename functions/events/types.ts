/**
 * The job events as types and JSON Schemas, from one source: each schema below
 * is written once with TypeBox, and its TypeScript type is `Static<>` of it.
 * `JobEventDetail` (exported here) is this file's type, so code
 * that publishes a field the schema does not know does not compile.
 *
 * The schemas use only JSON Schema draft-04 keywords (`enum`, never `const`),
 * since EventBridge's schema registry takes the `JSONSchemaDraft4` type.
 * `eventBridgeSchemaDocument` wraps a detail schema in the EventBridge event
 * envelope with the `x-amazon-events-*` keys AWS's own schemas carry, which is
 * what the construct registers (eventSchemaRegistry) and what
 * `schemas/events/*.json` holds (scripts/generate-event-schemas.ts).
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { JOB_STATUSES, type EventDetailType, type ImageryChoice, type InputObject, type JobError, type InputKind } from '../core/model.ts';

const JOB_STATUS_VALUES = JOB_STATUSES;

/** A string enum in draft-04 form (TypeBox's literal unions would use `const`). */
function StringEnum<const T extends readonly string[]>(values: T, description?: string) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...(description && { description }) });
}

/** The S3 object a job was made from. */
export const InputObjectSchema = Type.Object(
  {
    bucket: Type.String({ description: 'Bucket of the input.' }),
    key: Type.String({ description: 'Object key, decoded (as S3 shows it, not URL-encoded).' }),
    versionId: Type.Optional(Type.String({ description: 'Object version, when the bucket is versioned.' })),
    etag: Type.String({ description: 'ETag without quotes.' }),
    size: Type.Integer({ minimum: 0, description: 'Size in bytes.' }),
  },
  { additionalProperties: false, description: 'The S3 object the job was made from.' },
);

/** A code and a message that tell what went wrong and what to fix. */
export const JobErrorSchema = Type.Object(
  {
    code: Type.String({ description: 'Stable code, e.g. AREA_TOO_LARGE, NO_IMAGERY, PROCESSING_FAILED.' }),
    message: Type.String({ description: 'What went wrong and what to fix.' }),
    mapflowMessages: Type.Optional(
      Type.Array(
        Type.Object(
          {
            code: Type.String(),
            parameters: Type.Optional(Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: { type: 'string' } })),
          },
          { additionalProperties: false },
        ),
        { description: "Mapflow's processing messages, when the failure came from Mapflow." },
      ),
    ),
  },
  { additionalProperties: false },
);

/** The imagery a catalog search picked for the job (GeoJSON with `imagery.search`). */
export const ImageryChoiceSchema = Type.Object(
  {
    productId: Type.String({ description: 'Catalog image id, passed to Mapflow as imagerySearch.' }),
    providerName: Type.String(),
    rule: StringEnum(['newest', 'sharpest', 'least-cloud'] as const, 'The pick rule that chose it.'),
    acquisitionDate: Type.Optional(Type.String()),
    cloudCover: Type.Optional(Type.Number()),
    offNadirAngle: Type.Optional(Type.Number()),
    pixelResolution: Type.Optional(Type.Number({ description: 'Metres per pixel.' })),
    intersectionPercent: Type.Number({ description: 'Share of the AOI the image covers, 0 to 100.' }),
    candidates: Type.Integer({ minimum: 0, description: 'Products the search returned that passed the filters.' }),
  },
  { additionalProperties: false },
);

const detailProperties = {
  jobId: Type.String({ description: 'Job id: the input file name and a hash of bucket, key and ETag.' }),
  status: StringEnum(JOB_STATUS_VALUES, 'The job status after the transition.'),
  kind: StringEnum(
    ['geojson', 'geotiff', 'unsupported'] as const satisfies readonly InputKind[],
    "From the file's extension; 'unsupported' for a file the bridge does not take (always REJECTED UNSUPPORTED_FILE_TYPE).",
  ),
  input: InputObjectSchema,
  routeName: Type.String({ description: 'The route the input matched.' }),
  projectId: Type.Optional(Type.String()),
  mosaicId: Type.Optional(Type.String()),
  imageId: Type.Optional(Type.String()),
  processingIds: Type.Optional(Type.Array(Type.String(), { description: 'Mapflow processings of the job (one, or one per feature).' })),
  percentCompleted: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
  estimatedCost: Type.Optional(Type.Number({ minimum: 0, description: 'Credits, estimated before the processing.' })),
  actualCost: Type.Optional(Type.Number({ minimum: 0, description: 'Credits Mapflow charged.' })),
  resultPrefix: Type.Optional(Type.String({ description: 'Where the results are (results/<path under inbox>/).' })),
  reportKey: Type.Optional(Type.String({ description: 'The failure report (failed/<path under inbox>/report.json).' })),
  partialResults: Type.Optional(
    Type.Array(
      Type.Object(
        {
          part: Type.String({ description: 'The part whose processing failed.' }),
          key: Type.String({ description: 'Where its partial results are (failed/<path under inbox>/<part>/partial-result.geojson).' }),
          features: Type.Integer({ minimum: 0, description: 'Features in them.' }),
        },
        { additionalProperties: false },
      ),
      { description: 'What FAILED processings made before they failed, kept beside the report.' },
    ),
  ),
  error: Type.Optional(JobErrorSchema),
  imagery: Type.Optional(ImageryChoiceSchema),
  messages: Type.Optional(Type.Array(Type.String())),
  at: Type.String({ format: 'date-time', description: 'When the transition happened (ISO 8601).' }),
};

/** The detail every job event carries. */
export const JobEventDetailSchema = Type.Object(detailProperties, { additionalProperties: false, title: 'JobEventDetail' });
export type JobEventDetail = Static<typeof JobEventDetailSchema>;
/** The model's type, re-exported; the schema must describe exactly that type. */
export type { ImageryChoice };

/** The same detail with its status narrowed (keys keep their order). */
function detailWith<const S extends readonly (typeof JOB_STATUS_VALUES)[number][]>(title: string, statuses: S) {
  return Type.Object({ ...detailProperties, status: StringEnum(statuses, 'The job status after the transition.') }, { additionalProperties: false, title });
}

/** A final failure: its status narrowed and an error required. */
function failureDetail<const S extends readonly (typeof JOB_STATUS_VALUES)[number][]>(title: string, statuses: S) {
  return Type.Object(
    { ...detailProperties, status: StringEnum(statuses, 'The job status after the transition.'), error: JobErrorSchema },
    { additionalProperties: false, title },
  );
}

/**
 * One schema per detail-type. Intermediate events allow every non-final
 * status: with several parts, a part's event can come while the job's row is
 * already further on.
 */
const ACTIVE = ['RECEIVED', 'QUEUED', 'UPLOADING', 'UPLOADED', 'SUBMITTED', 'IN_PROGRESS'] as const;
export const EVENT_DETAIL_SCHEMAS = {
  'Job Received': detailWith('JobReceived', ['RECEIVED'] as const),
  'Job Queued': detailWith('JobQueued', ACTIVE),
  'Image Uploading': detailWith('ImageUploading', ACTIVE),
  'Image Uploaded': detailWith('ImageUploaded', ACTIVE),
  'Processing Submitted': detailWith('ProcessingSubmitted', ACTIVE),
  'Processing Started': detailWith('ProcessingStarted', ACTIVE),
  'Processing Restarted': detailWith('ProcessingRestarted', ACTIVE),
  'Job Succeeded': detailWith('JobSucceeded', ['SUCCEEDED'] as const),
  'Job Failed': failureDetail('JobFailed', ['FAILED'] as const),
  'Job Rejected': failureDetail('JobRejected', ['REJECTED'] as const),
  'Job Cancelled': detailWith('JobCancelled', ['CANCELLED'] as const),
} as const;

export type JobEventDetailType = keyof typeof EVENT_DETAIL_SCHEMAS;
export type JobReceivedDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Job Received']>;
export type JobQueuedDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Job Queued']>;
export type ImageUploadingDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Image Uploading']>;
export type ImageUploadedDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Image Uploaded']>;
export type ProcessingSubmittedDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Processing Submitted']>;
export type ProcessingStartedDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Processing Started']>;
export type ProcessingRestartedDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Processing Restarted']>;
export type JobSucceededDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Job Succeeded']>;
export type JobFailedDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Job Failed']>;
export type JobRejectedDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Job Rejected']>;
export type JobCancelledDetail = Static<(typeof EVENT_DETAIL_SCHEMAS)['Job Cancelled']>;

/** The detail type of each detail-type, for a subscriber's handler: `EventBridgeEvent<'Job Succeeded', JobEventDetailOf<'Job Succeeded'>>`. */
export type JobEventDetailOf<T extends JobEventDetailType> = Static<(typeof EVENT_DETAIL_SCHEMAS)[T]>;

/** An EventBridge event of the bridge as a Lambda target receives it. */
export interface JobEvent<T extends JobEventDetailType = JobEventDetailType> {
  version: string;
  id: string;
  'detail-type': T;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: JobEventDetailOf<T>;
}

/** The default event source (the construct's `eventSource` prop). */
export const DEFAULT_EVENT_SOURCE = 'mapflow.bridge';

/** Registry schema name of a detail-type: `<source>@<DetailTypeWithoutSpaces>`, as AWS names its own. */
export function eventSchemaName(detailType: JobEventDetailType, source = DEFAULT_EVENT_SOURCE): string {
  return `${source}@${String(EVENT_DETAIL_SCHEMAS[detailType].title)}`;
}

/** A plain JSON copy of a TypeBox schema (drops TypeBox's symbol keys). */
function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/**
 * The JSON Schema (draft-04) of a whole EventBridge event of one detail-type:
 * the envelope AWS's schemas use (account, detail, detail-type, id, region,
 * resources, source, time, version) with `detail` a `$ref` into `definitions`
 * and the `x-amazon-events-detail-type` / `x-amazon-events-source` keys.
 */
export function eventBridgeSchemaDocument(detailType: JobEventDetailType, source = DEFAULT_EVENT_SOURCE): Record<string, unknown> {
  const detail = EVENT_DETAIL_SCHEMAS[detailType];
  const name = String(detail.title);
  return {
    $schema: 'http://json-schema.org/draft-04/schema#',
    title: name,
    description: `mapflow-bridge "${detailType}" event (source ${source}).`,
    definitions: { [name]: plain(detail) },
    type: 'object',
    properties: {
      account: { type: 'string' },
      detail: { $ref: `#/definitions/${name}` },
      'detail-type': { type: 'string', enum: [detailType] },
      id: { type: 'string' },
      region: { type: 'string' },
      resources: { type: 'array', items: { type: 'string' } },
      source: { type: 'string', enum: [source] },
      time: { type: 'string', format: 'date-time' },
      version: { type: 'string' },
    },
    required: ['detail-type', 'resources', 'detail', 'id', 'source', 'time', 'region', 'version', 'account'],
    'x-amazon-events-detail-type': detailType,
    'x-amazon-events-source': source,
  };
}

/** The draft-04 schema of a detail alone (what a subscriber's `event.detail` holds). */
export function detailSchemaDocument(detailType: JobEventDetailType): Record<string, unknown> {
  return { $schema: 'http://json-schema.org/draft-04/schema#', ...plain(EVENT_DETAIL_SCHEMAS[detailType]) };
}

// ---- Compile-time checks: the model's interfaces and the schemas agree both ways.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameInput: Same<Static<typeof InputObjectSchema>, InputObject> = true;
const sameError: Same<Static<typeof JobErrorSchema>, JobError> = true;
const sameImagery: Same<Static<typeof ImageryChoiceSchema>, ImageryChoice> = true;
void sameImagery;
void sameInput;
void sameError;
const sameDetailTypes: Same<EventDetailType, JobEventDetailType> = true;
void sameDetailTypes;
