// The container image cannot be built here (no Docker engine), so what it depends on is checked from
// the sources: every file the server loads is copied into the build stage that compiles it, every
// package it imports is a production dependency (the image installs with --omit=dev), and the image runs
// the compiled JavaScript, without tsx.
import { existsSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { DOCUMENTED_DESCRIPTORS } from "../../server/reflection/documentation.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\("([^"]+)"\)/g;

/** Every source file reachable from what the image bundles (tsconfig.build.json's files: the server and the CLI), and every package those files import. */
function serverGraph(): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const spec = m[1] ?? m[2];
      if (spec.startsWith(".")) {
        const target = resolve(dirname(file), spec.replace(/\.js$/, ".ts"));
        expect(existsSync(target), `${relative(ROOT, file)} imports ${spec}`).to.equal(true);
        visit(target);
      } else if (!spec.startsWith("node:") && !builtinModules.includes(spec)) {
        packages.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]);
      }
    }
  };
  const build = JSON.parse(readFileSync(join(ROOT, "tsconfig.build.json"), "utf8").replace(/^\s*\/\/.*$/gm, ""));
  expect(build.files).to.include("server/main.ts");
  for (const entry of build.files) visit(join(ROOT, entry));
  return { files, packages };
}

describe("the container image (deploy/Dockerfile)", () => {
  const dockerfile = readFileSync(join(ROOT, "deploy/Dockerfile"), "utf8");
  const ignore = readFileSync(join(ROOT, "deploy/Dockerfile.dockerignore"), "utf8");
  const copied = [...dockerfile.matchAll(/^COPY (?!--from)(\S+) /gm)].map((m) => m[1]);
  const allowed = [...ignore.matchAll(/^!(\S+?)(?:\/\*\*)?$/gm)].map((m) => m[1]);
  const { files, packages } = serverGraph();

  it("copies, and lets into the build context, every file the server loads", () => {
    expect(files.size).to.be.greaterThan(30);
    for (const file of files) {
      const path = relative(ROOT, file);
      expect(copied.some((c) => path.startsWith(`${c}/`)), `${path} is copied`).to.equal(true);
      expect(allowed.some((a) => path.startsWith(`${a}/`)), `${path} is in the build context`).to.equal(true);
    }
    for (const f of ["package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json"]) expect(allowed, f).to.include(f);
    for (const f of ["tsconfig.json", "tsconfig.build.json"]) expect(dockerfile, f).to.match(new RegExp(`^COPY .*\\b${f.replace(".", "\\.")}\\b`, "m"));
  });

  it("copies, and lets into the build context, the descriptors that reflection serves with their comments", () => {
    expect(existsSync(join(ROOT, DOCUMENTED_DESCRIPTORS)), DOCUMENTED_DESCRIPTORS).to.equal(true);
    expect(copied.some((c) => DOCUMENTED_DESCRIPTORS.startsWith(`${c}/`)), `${DOCUMENTED_DESCRIPTORS} is copied`).to.equal(true);
    expect(allowed.some((a) => DOCUMENTED_DESCRIPTORS.startsWith(`${a}/`)), `${DOCUMENTED_DESCRIPTORS} is in the build context`).to.equal(true);
  });

  it("needs only production dependencies, and not tsx", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    for (const p of packages) expect(pkg.dependencies, `${p} is a dependency`).to.have.property(p);
    expect(pkg.dependencies).not.to.have.property("tsx");
    expect(packages).not.to.include("tsx");
  });

  it("runs the server as a non-root user, with the container addresses and the right entry point", () => {
    expect(dockerfile).to.match(/^USER nonroot$/m);
    expect(dockerfile).to.include("FENCEKEEPER_LISTEN=0.0.0.0:50051");
    expect(dockerfile).to.include("FENCEKEEPER_METRICS_LISTEN=0.0.0.0:9464");
    expect(dockerfile).to.include('ENTRYPOINT ["/nodejs/bin/node", "dist/server/main.js"]');
    expect(dockerfile).to.match(/npm ci --omit=dev/);
    // Bundled in the build stage, as scripts/build.sh bundles it; only the output reaches the image.
    expect(dockerfile).to.match(/^COPY scripts\/bundle\.sh \.\/scripts\/bundle\.sh$/m);
    expect(dockerfile).to.match(/^RUN bash scripts\/bundle\.sh$/m);
    expect(allowed).to.include("scripts/bundle.sh");
    expect(dockerfile).to.match(/^COPY --from=build \/app\/dist \.\/dist$/m);
    // The console's page, bundled into dist/ with the rest.
    expect(dockerfile).to.match(/^COPY console \.\/console$/m);
    expect(readFileSync(join(ROOT, "scripts/bundle.sh"), "utf8")).to.match(/esbuild console\/app\.ts --bundle .*--outfile=dist\/console\/app\.js/);
  });
});
