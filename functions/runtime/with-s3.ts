/** Provides the S3 client to the handler context (import it in handlers that read or write S3). */
import { s3Client } from './aws.ts';
import { provideS3Client } from './providers.ts';

provideS3Client(s3Client);
