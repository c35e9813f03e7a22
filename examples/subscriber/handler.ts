/**
 * Example subscriber: runs on every "Job Succeeded" event of the bridge and
 * reads the job's results from S3 (each part's job.json and the size of its
 * result.geojson). The event type comes from the bridge's package, so the
 * detail's fields are checked by the compiler.
 *
 * In your own project: `import type { JobEvent } from 'mapflow-bridge/events';`
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { JobEvent } from '../../functions/events/types.ts';

const s3 = new S3Client({});

export interface ResultSummary {
  jobId: string;
  results: { key: string; bytes: number }[];
  jobFiles: { key: string; status?: string }[];
}

export async function handler(event: JobEvent<'Job Succeeded'>, client: S3Client = s3): Promise<ResultSummary> {
  const { jobId, input, resultPrefix } = event.detail;
  const summary: ResultSummary = { jobId, results: [], jobFiles: [] };
  if (!resultPrefix) return summary;
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: input.bucket, Prefix: resultPrefix, ContinuationToken: token }));
    for (const object of page.Contents ?? []) {
      if (!object.Key) continue;
      if (object.Key.endsWith('/job.json')) {
        // job.json is small (what was asked and what came back); the results may be large and are not read here.
        const body = await client.send(new GetObjectCommand({ Bucket: input.bucket, Key: object.Key }));
        const job = JSON.parse((await body.Body?.transformToString('utf8')) ?? '{}') as { status?: string };
        summary.jobFiles.push({ key: object.Key, status: job.status });
      } else if (object.Key.endsWith('/result.geojson')) {
        summary.results.push({ key: object.Key, bytes: object.Size ?? 0 });
      }
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  console.log(JSON.stringify({ message: 'results of a finished Mapflow job', ...summary }));
  return summary;
}
