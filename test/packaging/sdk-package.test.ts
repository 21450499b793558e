// The SDK as another project gets it: `npm pack` of client/ (@fencekeeper/client), the tarball installed
// into a throwaway project, used from plain JavaScript against a real server (acquire, a fenced write,
// release), and its types checked by tsc. Installing fetches the SDK's three dependencies, from npm's
// cache when they are there (--prefer-offline).
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect } from "chai";
import { FencekeeperClient } from "../../client/index.js";
import { ensureBuilt } from "../harness/build.js";
import { uniqueResource, useServer } from "../harness/suite.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const GUARD = `--import=${fileURLToPath(new URL("./compiled-only.mjs", import.meta.url))}`;
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const exec = promisify(execFile);

/** Runs a command; resolves with its exit code and output, whatever the code. */
async function run(file: string, args: string[], o: { cwd: string; env?: Record<string, string> }) {
  try {
    const { stdout, stderr } = await exec(file, args, { cwd: o.cwd, env: { ...process.env, ...o.env }, maxBuffer: 16 << 20 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

const USE = `
import { FencekeeperClient } from "@fencekeeper/client";
const [url, resource] = process.argv.slice(2);
const fk = new FencekeeperClient({ servers: url });
const lease = await fk.acquire(resource, { ttl: 10000 });
const commit = await lease.put("k", "written through the package");
await lease.release();
await fk.close();
console.log(JSON.stringify({ generation: String(lease.token.generation), fence: String(commit.fence), held: lease.held }));
`;

const TYPED = `
import { FencekeeperClient, LeaseLostError, type Token } from "@fencekeeper/client";
import { fencedUpdate } from "@fencekeeper/client/postgres";
import { fencedSet } from "@fencekeeper/client/redis";
import { fencedUpdate as fencedUpdateMy, mariadbFenceStore } from "@fencekeeper/client/mariadb";
import { fencedEndpoint, fencingTokenHeader } from "@fencekeeper/client/fenced-http";
import { postgresFenceStore } from "@fencekeeper/client/postgres-fence-store";
export async function use(url: string): Promise<bigint> {
  const fk = new FencekeeperClient({ servers: [url], fenceMode: "order" });
  const lease = await fk.acquire("r", { ttl: 5000, wait: 1000 });
  const token: Token = lease.token;
  void fencedUpdate; void fencedSet; void LeaseLostError; void fencedUpdateMy; void mariadbFenceStore;
  const fenced = fencedEndpoint({ keys: () => fk.tokenKeys(), store: postgresFenceStore({ query: async () => ({ rowCount: 0, rows: [] }) }) });
  void fenced.middleware((req) => req.url); void fencingTokenHeader(token);
  return token.generation;
}
`;
// Wrong on purpose: tsc must refuse it, or the package's types are not being checked at all.
const MISTYPED = `
import { FencekeeperClient } from "@fencekeeper/client";
const fk = new FencekeeperClient({ servers: 50051 });
const generation: string = (await fk.acquire("r")).token.generation;
`;

describe("packaging: the SDK as a package (@fencekeeper/client)", () => {
  const s = useServer(["--metrics-listen", "off"]);
  let dir: string;
  let project: string;
  let tarball: string;

  before(async function () {
    this.timeout(300_000);
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-sdk-package-"));
    const packed = await run("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: join(ROOT, "client") });
    expect(packed.code, packed.stderr).to.equal(0);
    tarball = join(dir, packed.stdout.trim().split("\n").pop()!);
    project = join(dir, "project");
    rmSync(project, { recursive: true, force: true });
    await exec("mkdir", ["-p", project]);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "uses-fencekeeper", private: true, type: "module", dependencies: { "@fencekeeper/client": `file:${tarball}` } }));
    const installed = await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: project });
    expect(installed.code, installed.stderr).to.equal(0);
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("holds the compiled SDK and the generated code it imports, with types, and nothing of the server or the CLI", async () => {
    const files = (await exec("tar", ["-tzf", tarball])).stdout.trim().split("\n");
    for (const f of ["package/package.json", "package/dist/client/index.js", "package/dist/client/index.d.ts", "package/dist/client/postgres.js", "package/dist/client/redis.js", "package/dist/client/mariadb.js", "package/dist/gen/ts/fencekeeper/v1/lease_pb.js"]) {
      expect(files).to.include(f);
    }
    expect(files.filter((f) => /\/(server|cli)\//.test(f) || (/\.ts$/.test(f) && !f.endsWith(".d.ts")) || f.includes("tsbuildinfo"))).to.deep.equal([]);
  });

  it("depends on protobuf-es, connect and grpc-js only (unary calls go through grpc-js: docs/client.md)", () => {
    const pkg = JSON.parse(readFileSync(join(project, "node_modules/@fencekeeper/client/package.json"), "utf8"));
    expect(Object.keys(pkg.dependencies).sort()).to.deep.equal(["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-node", "@grpc/grpc-js"]);
    const installed = readdirSync(join(project, "node_modules")).filter((d) => !d.startsWith("."));
    for (const serverSide of ["commander", "etcd3", "pino", "prom-client", "jose", "cockatiel", "pg", "ioredis", "mysql2", "tsx"]) expect(installed).to.not.include(serverSide);
  });

  it("works from plain JavaScript against a real server: acquire, a fenced write, release", async function () {
    this.timeout(60_000);
    writeFileSync(join(project, "use.mjs"), USE);
    const resource = uniqueResource("package");
    const r = await run(process.execPath, ["use.mjs", s.server.url, resource], { cwd: project, env: { NODE_OPTIONS: GUARD } });
    expect(r.code, r.stderr).to.equal(0);
    const out = JSON.parse(r.stdout);
    expect(out.fence).to.equal(out.generation);
    expect(out.held).to.equal(false);

    const fk = new FencekeeperClient({ servers: s.server.url });
    try {
      const got = await fk.store.get(resource, "k");
      expect(new TextDecoder().decode(got.value)).to.equal("written through the package");
      expect(String(got.fence)).to.equal(out.generation);
      expect((await fk.describe(resource)).held).to.equal(false);
    } finally {
      await fk.close();
    }
  });

  it("has types that tsc resolves: a correct program passes, a mistyped one is refused", async function () {
    this.timeout(120_000);
    const tsconfig = (file: string) => ({
      compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, typeRoots: [join(ROOT, "node_modules/@types")], types: ["node"] },
      files: [file],
    });
    writeFileSync(join(project, "typed.ts"), TYPED);
    writeFileSync(join(project, "mistyped.ts"), MISTYPED);
    writeFileSync(join(project, "tsconfig.typed.json"), JSON.stringify(tsconfig("typed.ts")));
    writeFileSync(join(project, "tsconfig.mistyped.json"), JSON.stringify(tsconfig("mistyped.ts")));
    const [typed, mistyped] = await Promise.all([
      run(process.execPath, [TSC, "-p", "tsconfig.typed.json"], { cwd: project }),
      run(process.execPath, [TSC, "-p", "tsconfig.mistyped.json"], { cwd: project }),
    ]);
    expect(typed.code, typed.stdout).to.equal(0);
    expect(mistyped.code).to.not.equal(0);
    expect(mistyped.stdout).to.match(/mistyped\.ts\(3,.*TS2322/);
    expect(mistyped.stdout).to.match(/mistyped\.ts\(4,.*TS2322/);
  });
});
