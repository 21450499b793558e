// server/ and client/ (the TypeScript SDK) import one way: no module reaches itself through its imports. A circle makes load order
// matter (a class read before its module ran is undefined) and ties two concepts into one. Every import
// counts, `import type` and `import()` too: each says one module needs the other.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { expect } from "chai";
import ts from "typescript";

/** Each module under root and the modules under root it imports (relative specifiers, .js naming the .ts). */
function importGraph(root: string): Map<string, string[]> {
  const files = readdirSync(root, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts") && !f.startsWith("dist/") && !f.includes("node_modules"))
    .map((f) => join(root, f));
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = importedFiles
      .map((i) => i.fileName)
      .filter((s) => s.startsWith("."))
      .map((s) => resolve(dirname(file), s).replace(/\.js$/, ".ts"))
      .filter((t) => known.has(t));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Every circle, once each, as the path of modules around it (depth-first search, grey = on the path). */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "grey" | "black">();
  const path: string[] = [];
  const visit = (m: string) => {
    state.set(m, "grey");
    path.push(m);
    for (const next of graph.get(m) ?? []) {
      if (state.get(next) === "grey") found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(m, "black");
  };
  for (const m of [...graph.keys()].sort()) if (!state.has(m)) visit(m);
  return found;
}

for (const dir of ["server", "client"]) {
  describe(`${dir}/ imports`, () => {
    it("form no circle", () => {
      const root = resolve(import.meta.dirname, "../..", dir);
      const named = circles(importGraph(root)).map((c) => c.map((m) => relative(root, m)).join(" -> "));
      expect(named, `import circles in ${dir}/:\n  ${named.join("\n  ")}`).to.deep.equal([]);
    });
  });
}
