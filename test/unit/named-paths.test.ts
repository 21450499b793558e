// Every file of the repository that a comment, a script or a page names by its path exists: a file moved
// or merged leaves no pointer to nowhere behind it (a reader who follows one finds nothing and stops
// trusting the rest).
import { expect } from "chai";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Where the naming is read: the project's own sources, scripts, benches and pages. */
const READ = ["server", "client", "bench", "scripts", "docs", "test", "deploy", "sdk", "contract", "README.md"];
const SKIP = new Set(["node_modules", "dist", "target", ".test-results", ".venv", "build"]);
const TEXT = /\.(ts|md|sh|cjs|mjs|yaml|yml|go|py|java|xml|toml)$/;
/** A path from the root into one of the project's folders, with a file's extension, not part of a longer name. */
const NAMED = /(?<![\w./-])(?:server|client|test|docs|scripts|bench|sdk|deploy|proto|gen)\/[\w./-]*?\.(?:ts|md|go|py|java|sh|proto|json|jsonl|yaml|cjs|mjs)(?![\w-])/g;
/** Named on purpose though absent from a clone: what a build or a run writes, and what is named as a pattern. */
const NOT_FILES = [
  /^client\/[\w/-]+\.d\.ts$/, // the declarations the client's build writes into dist/
  /^bench\/results\//, // what a bench run writes (ignored by git: absent from a fresh clone)
  /\/\.\.\.\//, // an elided middle ("sdk/java/probe/.../X.java")
];
/** Files that name an older layout on purpose, to run against older commits. */
const OLDER_LAYOUTS = new Set(["bench/startup-time.ts"]);

function* files(path: string): Generator<string> {
  const full = join(ROOT, path);
  if (!existsSync(full)) return;
  if (statSync(full).isFile()) {
    if (TEXT.test(path)) yield path;
    return;
  }
  for (const entry of readdirSync(full)) if (!SKIP.has(entry)) yield* files(join(path, entry));
}

describe("paths named in the repository", () => {
  it("every file a comment, script or page names by its path exists", () => {
    const missing: string[] = [];
    let named = 0;
    for (const file of READ.flatMap((p) => [...files(p)])) {
      if (OLDER_LAYOUTS.has(file)) continue;
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const m of text.matchAll(NAMED)) {
        const path = m[0];
        if (NOT_FILES.some((r) => r.test(path))) continue;
        named++;
        if (!existsSync(join(ROOT, path))) missing.push(`${relative(ROOT, join(ROOT, file))} names ${path}`);
      }
    }
    expect(named, "paths found at all").to.be.greaterThan(500);
    expect(missing).to.deep.equal([]);
  });
});
