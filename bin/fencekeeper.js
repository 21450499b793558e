#!/usr/bin/env node
// The fencekeeper command: runs the compiled CLI (cli/main.ts, compiled to dist/ by scripts/build.sh,
// which scripts/setup.sh runs).
import { existsSync } from "node:fs";

const main = new URL("../dist/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  process.stderr.write("fencekeeper: the CLI is not compiled yet; run `bash scripts/setup.sh` in the repository\n");
  process.exit(1);
}
await import(main.href);
