// Every language's conformance client (SCENARIO.md) against one etcd and one server, then the clients
// against each other: a lease taken in one language fences a writer in another.
// scripts/setup-polyglot.sh builds the clients (npm test runs it first). A client that is not built fails
// its tests with the reason and the install hint that the setup left in .conformance/<language>.missing.
import { expect } from "chai";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { useServer, uniqueResource } from "../harness/suite.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

interface Client {
  /** Short name, used in resource names and holder labels. */
  name: string;
  title: string;
  /** The toolchain that setup-polyglot.sh builds it with, or none. */
  language?: "go" | "python" | "java";
  /** What must exist once it is built. */
  artifact?: string;
  /** The command line of one call: command is scenario, acquire, put, get or release. */
  argv(command: string): string[];
}

const CLIENTS: Client[] = [
  {
    name: "go",
    title: "Go (grpc-go)",
    language: "go",
    artifact: ".conformance/go/fk-conformance",
    argv: (command) => [".conformance/go/fk-conformance", command],
  },
  {
    name: "python",
    title: "Python (grpcio)",
    language: "python",
    artifact: ".conformance/venv/bin/python",
    argv: (command) => [".conformance/venv/bin/python", "test/conformance/python/conformance.py", command],
  },
  {
    name: "java",
    title: "Java (grpc-java)",
    language: "java",
    artifact: "test/conformance/java/target/fk-conformance.jar",
    argv: (command) => ["java", "-jar", "test/conformance/java/target/fk-conformance.jar", command],
  },
  ...["connect", "grpc-js"].map((library) => ({
    name: `ts-${library}`,
    title: `TypeScript (${library === "connect" ? "@connectrpc/connect" : "@grpc/grpc-js"})`,
    argv: (command: string) => [process.execPath, "--import", "tsx", "test/conformance/typescript/main.ts", command, "--library", library],
  })),
];

/** Fails, with what to do, when setup-polyglot.sh has not built client. */
function assertBuilt(client: Client): void {
  if (!client.language) return;
  const missing = `${ROOT}/.conformance/${client.language}.missing`;
  if (existsSync(missing)) {
    throw new Error(`the ${client.title} conformance client is not built: ${readFileSync(missing, "utf8").trim()}`);
  }
  if (!existsSync(`${ROOT}/${client.artifact}`)) {
    throw new Error(`the ${client.title} conformance client is not built: run bash scripts/setup-polyglot.sh (npm test runs it)`);
  }
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs one call of client; resolves when it exits, whatever its exit code. */
async function run(client: Client, command: string, flags: Record<string, string>): Promise<Run> {
  assertBuilt(client);
  const [file, ...args] = client.argv(command);
  const started = Date.now();
  const child = spawn(file, [...args, ...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v])], { cwd: ROOT });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.once("error", (e) => reject(new Error(`${client.title}: cannot run ${file}: ${e.message}`)));
    child.once("close", (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

/** One single call (SCENARIO.md): its JSON answer. */
async function call(client: Client, command: string, flags: Record<string, string>): Promise<Record<string, any>> {
  const r = await run(client, command, flags);
  if (r.code !== 0) throw new Error(`${client.title} ${command} exited with ${r.code}:\n${r.stderr}${r.stdout}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
}

describe("conformance: every language's client against one server", function () {
  this.timeout(120_000);
  const s = useServer();

  describe("the scenario of SCENARIO.md", () => {
    // The scenarios spend most of their time waiting (KeepAlive over three TTLs), so they run at once.
    const scenarios = new Map<string, Promise<Run>>();
    before(() => {
      for (const client of CLIENTS) {
        const started = run(client, "scenario", { server: s.server.url, resource: uniqueResource(`scenario-${client.name}`) });
        started.catch(() => {}); // reported by the client's own test
        scenarios.set(client.name, started);
      }
    });
    after(() => {
      const times = [...scenarios.entries()].map(async ([name, r]) => `${name} ${((await r.catch(() => undefined))?.ms ?? NaN) / 1000}s`);
      return Promise.all(times).then((t) => console.log(`      scenario run times (all at once): ${t.join(", ")}`));
    });

    for (const client of CLIENTS) {
      it(client.title, async () => {
        const r = await scenarios.get(client.name)!;
        expect(r.code, `${client.title} scenario failed:\n${r.stdout}${r.stderr}`).to.equal(0);
        expect(r.stdout).to.match(/^ok clean up$/m);
      });
    }
  });

  describe("across languages: a lease taken in one fences a writer in another", () => {
    // The ring of SCENARIO.md: each client holds once and writes once.
    const pairs = CLIENTS.map((holder, i) => [holder, CLIENTS[(i + 1) % CLIENTS.length]] as const);
    for (const [holder, writer] of pairs) {
      it(`${holder.title} holds, ${writer.title} writes`, async () => {
        const server = s.server.url;
        const resource = uniqueResource(`cross-${holder.name}-${writer.name}`);
        const put = (client: Client, token: Record<string, any>, value: string) =>
          call(client, "put", { server, resource, key: "owner", value, generation: token.generation, "lease-id": token.lease_id });

        // A TTL long enough for several process starts between acquire and release.
        const a = await call(holder, "acquire", { server, resource, holder: holder.name, ttl: "15" });
        expect(a, "holder acquire").to.include({ ok: true });
        expect(await put(holder, a, `by ${holder.name}`), "holder put").to.deep.equal({ ok: true, fence: a.generation });
        expect(await call(holder, "release", { server, resource, generation: a.generation, "lease-id": a.lease_id })).to.deep.equal({ ok: true });

        const b = await call(writer, "acquire", { server, resource, holder: writer.name, ttl: "15" });
        expect(b, "writer acquire").to.include({ ok: true });
        expect(BigInt(b.generation) > BigInt(a.generation), `generation ${b.generation} after ${a.generation}`).to.equal(true);
        expect(await put(writer, b, `by ${writer.name}`), "writer put").to.deep.equal({ ok: true, fence: b.generation });

        const stale = { ok: false, code: "FAILED_PRECONDITION", reason: "STALE_TOKEN" };
        expect(await put(holder, a, "stale"), `${holder.title} with its old token`).to.deep.equal(stale);
        expect(await put(writer, a, "stale"), `${writer.title} with ${holder.title}'s old token`).to.deep.equal(stale);
        expect(await call(writer, "get", { server, resource, key: "owner" })).to.deep.equal({ ok: true, found: true, value: `by ${writer.name}` });
        expect(await call(writer, "release", { server, resource, generation: b.generation, "lease-id": b.lease_id })).to.deep.equal({ ok: true });
      });
    }
  });
});
