/**
 * Checks made before a local command starts anything, so a newcomer gets one
 * clear message instead of a stack trace half-way through the start.
 */
import { checkJava } from './java.ts';

export { checkJava, JAVA_MISSING_MESSAGE } from './java.ts';

/** The local engine (aws-local-stepfunctions) needs Node 22 or newer (Promise.withResolvers). */
export function checkNode(version = process.versions.node): { ok: true } | { ok: false; message: string } {
  const major = Number(version.split('.')[0]);
  if (major >= 22) return { ok: true };
  return {
    ok: false,
    message:
      `mapflow-bridge needs Node.js 22 or newer; this is Node ${version}.\n` +
      `Run it through npm (npm start, npx mapflow-bridge ...), which uses the Node version the project pins, or install Node 22+.`,
  };
}

/**
 * What every command that starts local services checks first (Node 22+, Java
 * 17+). Prints the reason and returns false when the command cannot run.
 */
export function preflight(): boolean {
  for (const check of [checkNode(), checkJava()]) {
    if (!check.ok) {
      console.error(check.message);
      return false;
    }
  }
  return true;
}
