/**
 * Where `start` keeps its state, and the file through which other commands
 * (jobs, the console) find a running bridge. A module of its own so that the
 * commands can share them without importing start.ts (an import cycle there
 * leaves them uninitialised: "Cannot access 'DEFAULT_STATE_DIR' before initialization").
 */
export const DEFAULT_STATE_DIR = '.local';
/** Written while `start` runs, so `jobs` can read the running ledger. */
export const ENDPOINTS_FILE = 'endpoints.json';
