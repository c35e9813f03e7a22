/** S3 streaming helpers. */
export * from './s3.ts';
