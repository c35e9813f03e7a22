/**
 * A streamed multipart/form-data body with one file part named `file`.
 *
 * The file is never buffered: the body is the part header, then the source
 * stream's chunks as they come, then the closing boundary. Its length is known
 * up front (header + declared size + trailer), so the request carries a
 * Content-Length, which upload endpoints behind proxies want.
 */
import { randomBytes } from 'node:crypto';
import type { UploadSource } from './types.ts';

/** A request body streamed from a source that can be read once (sent by http/transport.ts). */
export interface StreamedBody {
  contentType: string;
  length: number;
  /** The body for one attempt; `onProgress` is called per chunk (it re-arms the timeout). */
  open(onProgress: () => void): AsyncIterable<Uint8Array>;
  /** True once any byte of the source has been read: the body can no longer be sent again. */
  consumed(): boolean;
}

/**
 * Reading the upload's source stream failed (or gave the wrong number of
 * bytes). The request was cut short, so the server received an incomplete
 * body (its Content-Length was not met) and created nothing: this is not an
 * unknown outcome. The upload cannot be resent from the same stream.
 */
export class UploadSourceError extends Error {
  readonly code: string = 'UPLOAD_SOURCE_FAILED';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UploadSourceError';
  }
}

/** The source stream produced more or fewer bytes than its declared size. */
export class UploadSizeMismatch extends UploadSourceError {
  override readonly code = 'UPLOAD_SIZE_MISMATCH';
  constructor(declared: number, actual: number, tooMany: boolean) {
    super(
      tooMany
        ? `upload source produced more than its declared ${declared} bytes`
        : `upload source ended after ${actual} of its declared ${declared} bytes`,
    );
    this.name = 'UploadSizeMismatch';
  }
}

/** Finds an UploadSourceError on an error or its causes. */
export function findUploadSourceError(error: unknown): UploadSourceError | undefined {
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 5; depth++) {
    if (current instanceof UploadSourceError) return current;
    current = current.cause;
  }
  return undefined;
}

/** Quotes a filename for Content-Disposition the way browsers do (HTML form encoding). */
export function quoteFilename(filename: string): string {
  return filename.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}

export function multipartFileBody(source: UploadSource, boundary = `----mapflow-bridge-${randomBytes(12).toString('hex')}`): StreamedBody {
  if (!Number.isSafeInteger(source.size) || source.size < 0) {
    throw new RangeError(`upload size must be a non-negative integer (got ${source.size})`);
  }
  const head = Buffer.from(
    `--${boundary}\r\n` +
      `Content-Disposition: form-data; name="file"; filename="${quoteFilename(source.filename)}"\r\n` +
      `Content-Type: ${source.contentType ?? 'image/tiff'}\r\n\r\n`,
    'utf8',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8');
  let consumed = false;

  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    length: head.length + source.size + tail.length,
    consumed: () => consumed,
    open(onProgress) {
      return (async function* body() {
        yield head;
        let sent = 0;
        consumed = true;
        const chunks = source.stream[Symbol.asyncIterator]();
        for (;;) {
          let next: IteratorResult<unknown>;
          try {
            next = await chunks.next();
          } catch (error) {
            throw new UploadSourceError(`reading the upload source failed: ${(error as Error)?.message ?? String(error)}`, { cause: error });
          }
          if (next.done) break;
          const chunk = next.value as Buffer | Uint8Array | string;
          const buf: Buffer = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
          sent += buf.length;
          if (sent > source.size) {
            await chunks.return?.();
            throw new UploadSizeMismatch(source.size, sent, true);
          }
          onProgress();
          yield buf;
        }
        if (sent !== source.size) throw new UploadSizeMismatch(source.size, sent, false);
        yield tail;
      })();
    },
  };
}
