/** S3 streaming helpers, and what a stored file's bytes are. */
export * from './s3.ts';
export * from './describe.ts';
