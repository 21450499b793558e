// server/, client/ (the TypeScript SDK) and the Python SDK import one way: no module reaches itself through its imports. A circle makes load order
// matter (a class read before its module ran is undefined) and ties two concepts into one. Every import
// counts, `import type` and `import()` too: each says one module needs the other. server/'s folders
// import one way too: a folder whose module imports another folder's is above it, and no folder is
// above itself (the files directly in server/, which start and wire the process, are the top).
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

/**
 * The Python SDK's modules (sdk/python/src/fencekeeper, its generated v1/ aside) and those of its own that
 * each imports, wherever the import stands (in a function, under TYPE_CHECKING: each says one module needs
 * the other). `from fencekeeper import x` names module x; the package's __init__, which every import runs
 * first and which imports everything to export it, is left out.
 */
function pythonImportGraph(root: string): Map<string, string[]> {
  const files = readdirSync(root, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".py") && !f.startsWith("v1/") && f !== "__init__.py")
    .map((f) => join(root, f));
  const moduleOf = (dotted: string) => {
    const file = join(root, ...dotted.split(".")) + ".py";
    return files.includes(file) ? file : undefined;
  };
  const graph = new Map<string, string[]>();
  for (const file of files) {
    // Parenthesised name lists joined onto their line.
    const text = readFileSync(file, "utf8").replace(/\(([^)]*)\)/g, (_, names: string) => names.replace(/\s+/g, " "));
    const targets: string[] = [];
    for (const line of text.split("\n")) {
      const from = /^\s*from\s+(\.+|fencekeeper)(\.[\w.]+)?\s+import\s+(.+)$/.exec(line);
      if (from) {
        const inside = (from[2] ?? "").slice(1);
        if (inside) targets.push(...[moduleOf(inside)].filter((m) => m !== undefined));
        else targets.push(...from[3].split(",").flatMap((n) => [moduleOf(n.trim().split(/\s+/)[0])].filter((m) => m !== undefined)));
        continue;
      }
      const plain = /^\s*import\s+fencekeeper\.([\w.]+)/.exec(line);
      if (plain) targets.push(...[moduleOf(plain[1])].filter((m) => m !== undefined));
    }
    graph.set(file, [...new Set(targets)].filter((t) => t !== file));
  }
  return graph;
}

describe("sdk/python imports", () => {
  it("form no circle", () => {
    const root = resolve(import.meta.dirname, "../../sdk/python/src/fencekeeper");
    const graph = pythonImportGraph(root);
    expect(graph.get(join(root, "client.py")), "the graph reads the imports").to.include(join(root, "election.py"));
    const named = circles(graph).map((c) => c.map((m) => relative(root, m)).join(" -> "));
    expect(named, `import circles in sdk/python:\n  ${named.join("\n  ")}`).to.deep.equal([]);
  });
});

for (const dir of ["server", "client"]) {
  describe(`${dir}/ imports`, () => {
    it("form no circle", () => {
      const root = resolve(import.meta.dirname, "../..", dir);
      const named = circles(importGraph(root)).map((c) => c.map((m) => relative(root, m)).join(" -> "));
      expect(named, `import circles in ${dir}/:\n  ${named.join("\n  ")}`).to.deep.equal([]);
    });
  });
}

/** The graph of server/'s folders: one folder imports another when one of its modules imports one of the other's. */
function folderGraph(root: string, modules: Map<string, string[]>): Map<string, string[]> {
  const folderOf = (file: string) => {
    const parts = relative(root, file).split("/");
    return parts.length > 1 ? parts[0] : "(server/)";
  };
  const graph = new Map<string, string[]>();
  for (const [file, targets] of modules) {
    const from = folderOf(file);
    const to = new Set(graph.get(from) ?? []);
    for (const t of targets) if (folderOf(t) !== from) to.add(folderOf(t));
    graph.set(from, [...to]);
  }
  return graph;
}

describe("server/'s folders", () => {
  it("import one way: no folder reaches itself through another's imports", () => {
    const root = resolve(import.meta.dirname, "../../server");
    const modules = importGraph(root);
    const folders = folderGraph(root, modules);
    expect(folders.get("rpc"), "the graph reads the folders").to.include("auth");
    const named = circles(folders).map((c) => {
      // Each step of a circle with the imports that make it, so that the arrow to cut is plain.
      const steps = c.slice(1).map((to, i) => {
        const from = c[i];
        const via = [...modules].flatMap(([f, ts]) => (relative(root, f).startsWith(`${from}/`) || (from === "(server/)" && !relative(root, f).includes("/")) ? ts.filter((t) => relative(root, t).startsWith(`${to}/`) || (to === "(server/)" && !relative(root, t).includes("/"))).map((t) => `${relative(root, f)} -> ${relative(root, t)}`) : []));
        return `${from} -> ${to} (${via.slice(0, 2).join("; ")})`;
      });
      return steps.join(", ");
    });
    expect(named, `import circles among server/'s folders:\n  ${named.join("\n  ")}`).to.deep.equal([]);
  });
});
