// The compiled JavaScript, for tests that run it as users do (bin/fencekeeper.js, npm start, the SDK
// package): scripts/build.sh compiles what changed since the last build, and does nothing otherwise.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Call in a before() with a generous timeout: a build from nothing takes half a minute or more on a busy machine. */
export async function ensureBuilt(): Promise<void> {
  await promisify(execFile)("bash", ["scripts/build.sh"], { cwd: ROOT });
}
