import { mkdtempSync } from 'node:fs';
import { synthLocalAssembly } from './packages/local/src/assembly/local-assembly.ts';
import { localAssemblySettings } from './packages/local/src/bridge.ts';
synthLocalAssembly(localAssemblySettings({}) as never, mkdtempSync('/tmp/sm-'), '/work/main/node_modules/.cache/mapflow-bridge/bundles-413425e1e9f1a2b912ee56a9308df1a3');
