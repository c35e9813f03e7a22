/**
 * DynamoDB Local (the local ledger) is a Java program: check for Java 17+
 * before starting anything, so a newcomer gets one clear message instead of a
 * stack trace half-way through the start. Same advice as scripts/check-java.sh.
 */
import { spawnSync } from 'node:child_process';

export const JAVA_MISSING_MESSAGE = `mapflow-bridge needs a Java 17 (or newer) runtime for DynamoDB Local, the local ledger.
Install one, for example:
  Debian/Ubuntu:  sudo apt-get install -y default-jre-headless   (or openjdk-17-jre-headless)
  macOS:          brew install openjdk@17
  Windows:        winget install EclipseAdoptium.Temurin.17.JRE
then run the command again.`;

/** The major version in `java -version` output ("1.8.0_392" -> 8, "17.0.15" -> 17). */
export function javaMajorVersion(versionOutput: string): number | undefined {
  const match = /version "(\d+)(?:\.(\d+))?/.exec(versionOutput);
  if (!match) return undefined;
  const first = Number(match[1]);
  return first === 1 && match[2] !== undefined ? Number(match[2]) : first;
}

export function checkJava(): { ok: true; major: number } | { ok: false; message: string } {
  const result = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (result.error) return { ok: false, message: `Java was not found on the PATH.\n${JAVA_MISSING_MESSAGE}` };
  const major = javaMajorVersion(`${result.stderr}${result.stdout}`);
  if (major === undefined) return { ok: false, message: `Cannot read the Java version from 'java -version'.\n${JAVA_MISSING_MESSAGE}` };
  if (major < 17) return { ok: false, message: `Java ${major} was found; DynamoDB Local needs 17 or newer.\n${JAVA_MISSING_MESSAGE}` };
  return { ok: true, major };
}
