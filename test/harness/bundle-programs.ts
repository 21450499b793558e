// Bundles the programs of test/harness/programs.ts into the folder given, for scripts/test.sh: each one
// JavaScript file with the repository's modules it imports (client/, gen/, test/ helpers); packages stay
// in node_modules. A module's import.meta.url (and dirname, filename) stays its source's, so that paths
// it finds from it (the repository's root, docs, other programs) are the same as through tsx.
//   node --import tsx test/harness/bundle-programs.ts DIR
import { build, type Plugin } from "esbuild";
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { bundlePath, PROGRAMS } from "./programs.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const out = resolve(process.argv[2] ?? "");
if (!process.argv[2]) throw new Error("usage: bundle-programs.ts DIR");

const sourceImportMeta: Plugin = {
  name: "source-import-meta",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async ({ path }) => {
      const text = await readFile(path, "utf8");
      return {
        loader: "ts",
        contents: text
          .replace(/\bimport\.meta\.url\b/g, JSON.stringify(pathToFileURL(path).href))
          .replace(/\bimport\.meta\.dirname\b/g, JSON.stringify(dirname(path)))
          .replace(/\bimport\.meta\.filename\b/g, JSON.stringify(path)),
      };
    });
  },
};

await Promise.all(
  PROGRAMS.map((p) =>
    build({
      entryPoints: [resolve(ROOT, p)],
      outfile: bundlePath(out, p),
      bundle: true,
      packages: "external",
      platform: "node",
      format: "esm",
      target: "node20",
      logLevel: "warning",
      plugins: [sourceImportMeta],
    }),
  ),
);
