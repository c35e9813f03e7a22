/**
 * What IAM authorizes for an S3 REST request (path-style, as the local S3
 * serves it): the action(s), the resource ARN(s) and the context keys, after
 * AWS's "Actions, resources, and condition keys for Amazon S3" and the
 * permissions each operation's API reference lists. Multipart uploads need
 * s3:PutObject (create, upload part, complete), s3:AbortMultipartUpload and
 * s3:ListMultipartUploadParts; a copy needs s3:GetObject on the source too.
 */
import { parseQuery, splitUrl } from './sigv4.ts';

export interface IamRequest {
  action: string;
  resource: string;
  /** Condition context keys (e.g. s3:prefix), as IAM names them. */
  context?: Record<string, string | string[]>;
}

export interface S3Authorization {
  /** Every one must be allowed. */
  requests: IamRequest[];
  /**
   * For GET/HEAD of an object: the s3:ListBucket check AWS makes when the key
   * is missing (404 NoSuchKey with it, 403 AccessDenied without it).
   */
  listBucketIfMissing?: IamRequest;
}

const objectArn = (bucket: string, key: string) => `arn:aws:s3:::${bucket}/${key}`;
const bucketArn = (bucket: string) => `arn:aws:s3:::${bucket}`;

/** Bucket sub-resources (query parameters) and the action of each method on them. */
const BUCKET_SUBRESOURCES: Record<string, Partial<Record<string, string>>> = {
  acl: { GET: 's3:GetBucketAcl', PUT: 's3:PutBucketAcl' },
  cors: { GET: 's3:GetBucketCORS', PUT: 's3:PutBucketCORS', DELETE: 's3:PutBucketCORS' },
  lifecycle: { GET: 's3:GetLifecycleConfiguration', PUT: 's3:PutLifecycleConfiguration', DELETE: 's3:PutLifecycleConfiguration' },
  location: { GET: 's3:GetBucketLocation' },
  notification: { GET: 's3:GetBucketNotification', PUT: 's3:PutBucketNotification' },
  policy: { GET: 's3:GetBucketPolicy', PUT: 's3:PutBucketPolicy', DELETE: 's3:DeleteBucketPolicy' },
  tagging: { GET: 's3:GetBucketTagging', PUT: 's3:PutBucketTagging', DELETE: 's3:PutBucketTagging' },
  uploads: { GET: 's3:ListBucketMultipartUploads' },
  versioning: { GET: 's3:GetBucketVersioning', PUT: 's3:PutBucketVersioning' },
  versions: { GET: 's3:ListBucketVersions' },
  website: { GET: 's3:GetBucketWebsite', PUT: 's3:PutBucketWebsite', DELETE: 's3:DeleteBucketWebsite' },
};

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function decodePath(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The copy source header `/bucket/key[?versionId=...]` (URL-encoded) as bucket, key and version. */
function copySource(value: string): { bucket: string; key: string; versionId?: string } | undefined {
  const { path, search } = splitUrl(value);
  const decoded = decodePath(path).replace(/^\//, '');
  const slash = decoded.indexOf('/');
  if (slash <= 0) return undefined;
  const versionId = first(parseQuery(search)['versionId']);
  return { bucket: decoded.slice(0, slash), key: decoded.slice(slash + 1), ...(versionId ? { versionId } : {}) };
}

/**
 * The IAM requests an S3 REST request needs, or a string saying why it maps
 * to none (the caller refuses it: unknown operations are not let through).
 */
export function s3Authorization(method: string, url: string, headers: Readonly<Record<string, string | readonly string[] | undefined>>): S3Authorization | string {
  const verb = method.toUpperCase();
  const { path, search } = splitUrl(url);
  const query = parseQuery(search);
  const has = (name: string) => name in query;
  const match = /^\/([^/]*)(?:\/([\s\S]*))?$/.exec(path);
  if (!match) return `cannot read a bucket from the path ${path}`;
  const bucket = decodePath(match[1] ?? '');
  const key = match[2] !== undefined && match[2] !== '' ? decodePath(match[2]) : undefined;

  if (bucket === '') {
    return verb === 'GET' || verb === 'HEAD' ? { requests: [{ action: 's3:ListAllMyBuckets', resource: '*' }] } : `${verb} / is not an S3 operation`;
  }

  if (key === undefined) {
    for (const [name, actions] of Object.entries(BUCKET_SUBRESOURCES)) {
      if (!has(name)) continue;
      const action = actions[verb];
      return action ? { requests: [{ action, resource: bucketArn(bucket) }] } : `${verb} ?${name} on a bucket is not an S3 operation the local S3 knows`;
    }
    if (verb === 'GET' || verb === 'HEAD') {
      // ListObjects(V2) and HeadBucket; s3:prefix is what AWS matches conditions on ('' when absent).
      const context: Record<string, string> = { 's3:prefix': first(query['prefix']) ?? '' };
      const delimiter = first(query['delimiter']);
      if (delimiter !== undefined) context['s3:delimiter'] = delimiter;
      const maxKeys = first(query['max-keys']);
      if (maxKeys !== undefined) context['s3:max-keys'] = maxKeys;
      return { requests: [{ action: 's3:ListBucket', resource: bucketArn(bucket), context }] };
    }
    if (verb === 'PUT') return { requests: [{ action: 's3:CreateBucket', resource: bucketArn(bucket) }] };
    if (verb === 'DELETE') return { requests: [{ action: 's3:DeleteBucket', resource: bucketArn(bucket) }] };
    // DeleteObjects names its keys in the body, which the gate does not read: it needs
    // s3:DeleteObject on every key of the bucket (AWS checks each key and may refuse some only).
    if (verb === 'POST' && has('delete')) return { requests: [{ action: 's3:DeleteObject', resource: objectArn(bucket, '*') }] };
    return `${verb} on a bucket without a known sub-resource is not an S3 operation the local S3 knows`;
  }

  const object = objectArn(bucket, key);
  const versioned = has('versionId');
  const get = (resource: string, version: boolean): IamRequest => ({ action: version ? 's3:GetObjectVersion' : 's3:GetObject', resource });
  const listBucketIfMissing: IamRequest = { action: 's3:ListBucket', resource: bucketArn(bucket), context: { 's3:prefix': key } };
  const headerValue = (name: string) => first(headers[name] as string | string[] | undefined);

  switch (verb) {
    case 'GET':
    case 'HEAD': {
      if (has('uploadId')) return { requests: [{ action: 's3:ListMultipartUploadParts', resource: object }] };
      if (has('acl')) return { requests: [{ action: versioned ? 's3:GetObjectVersionAcl' : 's3:GetObjectAcl', resource: object }] };
      if (has('tagging')) return { requests: [{ action: versioned ? 's3:GetObjectVersionTagging' : 's3:GetObjectTagging', resource: object }] };
      if (has('attributes')) return { requests: [{ action: versioned ? 's3:GetObjectVersionAttributes' : 's3:GetObjectAttributes', resource: object }] };
      return { requests: [get(object, versioned)], listBucketIfMissing };
    }
    case 'PUT': {
      if (has('tagging')) return { requests: [{ action: versioned ? 's3:PutObjectVersionTagging' : 's3:PutObjectTagging', resource: object }] };
      if (has('acl')) return { requests: [{ action: versioned ? 's3:PutObjectVersionAcl' : 's3:PutObjectAcl', resource: object }] };
      const requests: IamRequest[] = [{ action: 's3:PutObject', resource: object }];
      const source = headerValue('x-amz-copy-source');
      if (source !== undefined) {
        const from = copySource(source);
        if (!from) return `the copy source ${source} names no bucket and key`;
        requests.push(get(objectArn(from.bucket, from.key), from.versionId !== undefined));
      }
      // A PutObject or CopyObject that sets tags or an ACL needs those permissions too.
      if (!has('partNumber') && headerValue('x-amz-tagging') !== undefined) requests.push({ action: 's3:PutObjectTagging', resource: object });
      if (!has('partNumber') && (headerValue('x-amz-acl') !== undefined || Object.keys(headers).some((name) => name.startsWith('x-amz-grant-')))) {
        requests.push({ action: 's3:PutObjectAcl', resource: object });
      }
      return { requests };
    }
    case 'POST': {
      if (has('uploads') || has('uploadId')) return { requests: [{ action: 's3:PutObject', resource: object }] };
      if (has('restore')) return { requests: [{ action: 's3:RestoreObject', resource: object }] };
      if (has('select')) return { requests: [get(object, false)] };
      return `POST on an object without ?uploads, ?uploadId, ?restore or ?select is not an S3 operation the local S3 knows`;
    }
    case 'DELETE': {
      if (has('uploadId')) return { requests: [{ action: 's3:AbortMultipartUpload', resource: object }] };
      if (has('tagging')) return { requests: [{ action: versioned ? 's3:DeleteObjectVersionTagging' : 's3:DeleteObjectTagging', resource: object }] };
      return { requests: [{ action: versioned ? 's3:DeleteObjectVersion' : 's3:DeleteObject', resource: object }] };
    }
    default:
      return `${verb} is not an S3 operation`;
  }
}
