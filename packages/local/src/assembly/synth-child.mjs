// The process that synthesizes the local cloud assembly (cache.ts): loading
// aws-cdk-lib and building the stack takes some 400 MB that a process keeps
// once touched, so the bridge does it in a process that ends when it is done.
// Reads one message { settings, outdir, bundlesDir }, answers { file } or
// { error }, then exits.
import { register } from 'tsx/esm/api';

register();
process.once('message', async (message) => {
  try {
    const { synthLocalAssembly } = await import('./local-assembly.ts');
    const file = synthLocalAssembly(message.settings, message.outdir, message.bundlesDir);
    process.send({ file }, () => process.exit(0));
  } catch (error) {
    process.send({ error: { message: error?.message ?? String(error), stack: error?.stack } }, () => process.exit(0));
  }
});
// Ctrl-C reaches the whole process group: the bridge decides when to stop, and it ends this process by disconnecting.
process.on('SIGINT', () => undefined);
process.on('disconnect', () => process.exit(0));
