/** The DynamoDB ledger (jobs, forward-only status) and the concurrency slots. */
export * from './ledger.ts';
export * from './slots.ts';
