/**
 * The full handler context: the lean one (./lean-context.ts) with the S3 and
 * Mapflow clients provided. The local bridge, the command line and tests use
 * this; a Lambda handler imports only what it calls (see lean-context.ts).
 */
import './with-s3.ts';
import './with-mapflow.ts';
import './with-sfn.ts';

export * from './lean-context.ts';
