// The TypeScript programs the tests start as processes of their own (probes, holders, fault workers, the
// conformance client), and how to start one. Under scripts/test.sh each runs as one JavaScript file that
// esbuild bundled before the run (test/harness/bundle-programs.ts; the packages it imports stay in
// node_modules), not through tsx: tsx's loader costs about 0.6 s of CPU at each start (the TypeScript
// probe: 0.85 s through tsx, 0.25 s bundled), the tests start these programs over a hundred times, and
// the tiers run CPU-bound on 2 cores. A test file run on its own (`npx mocha file`) runs the sources
// through tsx, which need no build after an edit, as test/harness/server.ts does for the server.
import { existsSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Every program started by nodeProgram(): a program missing here fails under scripts/test.sh. */
export const PROGRAMS = [
  "test/sdk/typescript/probe.ts",
  "test/faults/worker.ts",
  "test/conformance/typescript/main.ts",
  "test/integration/holder-process.ts",
  "test/fenced-http/http-holder.ts",
  "test/fenced-stores/holder.ts",
  "test/client/leader-process.ts",
  "test/client/session-holder.ts",
] as const;

/** Where scripts/test.sh put the bundles: FK_TEST_PROGRAMS, unset outside it. */
const BUNDLES = process.env.FK_TEST_PROGRAMS && resolve(ROOT, process.env.FK_TEST_PROGRAMS);

/** The bundle of a program, below dir: its path with .mjs for .ts. */
export function bundlePath(dir: string, program: string): string {
  return join(dir, program.replace(/\.ts$/, ".mjs"));
}

/**
 * The command that runs a program of PROGRAMS (a path from the repository's root, or absolute), followed
 * by its arguments: [node, bundle] under scripts/test.sh, else [node, --import, tsx, source].
 */
export function nodeProgram(program: string): string[] {
  const path = relative(ROOT, resolve(ROOT, program));
  if (!BUNDLES) return [process.execPath, "--import", "tsx", join(ROOT, path)];
  if (!(PROGRAMS as readonly string[]).includes(path)) {
    throw new Error(`${path} is not in PROGRAMS (test/harness/programs.ts): add it, so that scripts/test.sh bundles it`);
  }
  const bundle = bundlePath(BUNDLES, path);
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: scripts/test.sh bundles PROGRAMS before the run`);
  return [process.execPath, bundle];
}
