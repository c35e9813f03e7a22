#!/usr/bin/env node
// `mapflow-simulator [options]`: the Mapflow simulator on 127.0.0.1, loaded
// through tsx so that it runs straight from the package's TypeScript sources.
import { register } from 'tsx/esm/api';

register();
const { runSimCommand } = await import('../src/cli.ts');
process.exitCode = await runSimCommand(process.argv.slice(2));
