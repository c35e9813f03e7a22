/**
 * The upload receiver of the data-path bench in a process of its own (the
 * Mapflow simulator with room for large uploads), so its CPU and memory never
 * count in the measured client: prints `{"url": ...}` once listening and runs
 * until stdin closes.
 *
 *   node --import tsx packages/bench/receiver.ts <dataDir> <token> <email> [storageBytes]
 */
import { startSimulator } from '@mapflow-bridge/simulator';

const MB = 1024 * 1024;
const [dataDir, token, email, storageBytes] = process.argv.slice(2);
const sim = await startSimulator({
  token: token as string,
  email: email as string,
  dataDir: dataDir as string,
  // Room for every upload of the run (packages/bench/index.ts dataPathDiskBytes), at least 64 GiB.
  limits: { storageLimitBytes: Math.max(64 * 1024 * MB, Number(storageBytes) || 0), maxUploadFileSize: 16 * 1024 * MB },
});
process.stdout.write(`${JSON.stringify({ url: sim.url })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void sim.close().then(() => process.exit(0));
});
