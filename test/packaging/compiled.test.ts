// What users run is compiled JavaScript (scripts/build.sh): `npm start` serves from dist/server/main.js and
// the fencekeeper command runs dist/cli/main.js, neither loading TypeScript or tsx (the preloaded guard
// compiled-only.mjs fails a process that does); `fencekeeper serve` is the server's own command.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { FencekeeperClient } from "../../client/index.js";
import { ensureBuilt } from "../harness/build.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer } from "../harness/server.js";
import { uniqueResource } from "../harness/suite.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const GUARD = { NODE_OPTIONS: `--import=${fileURLToPath(new URL("./compiled-only.mjs", import.meta.url))}` };

async function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stdout, stderr };
}

/** The option lines of a command's --help. */
const optionsOf = (help: string) => help.slice(help.indexOf("Options:"));

describe("packaging: the server and the CLI run compiled", () => {
  let etcd: TestEtcd;
  before(async function () {
    this.timeout(300_000);
    await ensureBuilt();
    etcd = await startEtcd();
  });
  after(async function () {
    this.timeout(30_000);
    await etcd?.destroy();
  });

  it("the guard fails a process that loads TypeScript through tsx", async () => {
    const r = await run(["--import", "tsx", "server/main.ts", "--help"], GUARD);
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.include("compiled-only: loaded");
  });

  for (const [how, command] of [
    ["npm start (scripts/start.sh)", ["bash", "scripts/start.sh"]],
    ["fencekeeper serve", [process.execPath, "bin/fencekeeper.js", "serve"]],
  ] as const) {
    it(`${how} serves from compiled JavaScript: acquire, a fenced write, release`, async function () {
      this.timeout(120_000);
      const server = await startServer({ etcd: etcd.endpoint, command: [...command], args: ["--metrics-listen", "off"], env: GUARD });
      const fk = new FencekeeperClient({ servers: server.url });
      try {
        const resource = uniqueResource("compiled");
        const lease = await fk.acquire(resource, { ttl: 10_000 });
        const commit = await lease.put("k", "v");
        expect(commit.fence).to.equal(lease.token.generation);
        expect(new TextDecoder().decode((await fk.store.get(resource, "k")).value)).to.equal("v");
        await lease.release();
        expect((await fk.describe(resource)).held).to.equal(false);
      } finally {
        await fk.close();
        expect(await server.stop()).to.equal(0);
      }
      expect(server.logs.join("\n")).to.not.include("compiled-only");
    });
  }

  it("fencekeeper --help runs the compiled CLI, whose serve takes the options npm start takes", async function () {
    this.timeout(60_000);
    const help = await run(["bin/fencekeeper.js", "--help"], GUARD);
    expect(help.code, help.stderr).to.equal(0);
    expect(help.stdout).to.match(/^Usage: fencekeeper /);
    for (const command of ["serve", "acquire", "put", "get", "describe", "observe", "fence"]) expect(help.stdout).to.match(new RegExp(`^  ${command}\\b`, "m"));

    const [serve, server] = await Promise.all([run(["bin/fencekeeper.js", "serve", "--help"], GUARD), run(["dist/server/main.js", "--help"], GUARD)]);
    expect(serve.code, serve.stderr).to.equal(0);
    expect(server.code, server.stderr).to.equal(0);
    expect(optionsOf(server.stdout)).to.include("--etcd");
    expect(optionsOf(serve.stdout)).to.equal(optionsOf(server.stdout));
  });
});
