#!/usr/bin/env node
// Command-line entry: loads the TypeScript CLI through tsx so that
// `npx mapflow-bridge <command>` works straight after `npm ci`, no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/main.ts');
process.exitCode = await main(process.argv.slice(2));
