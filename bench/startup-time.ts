// Start-up time, median of several runs (scripts/startup-time.sh):
// - the server: from spawning the process to its first SERVING answer to grpc.health.v1.Health/Check,
//   against an etcd that is already running (the embedded etcd's own start-up is not counted);
// - the command: `fencekeeper --help`, from spawning to exit.
// Each way of running them that exists in this checkout is measured: from the TypeScript sources through
// tsx, and compiled (dist/, built by scripts/build.sh).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus } from "../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { startEtcd } from "../test/harness/etcd.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 7;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.once("error", reject);
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Milliseconds from spawn to the first SERVING health answer; the server is stopped afterwards. */
async function serverStartup(argv: string[], etcd: string, i: number): Promise<number> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(process.execPath, [...argv, "--listen", `127.0.0.1:${port}`, "--metrics-listen", "off", "--etcd", etcd, "--prefix", `/fk-startup-${i}/`, "--log-level", "warn"], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  const transport = createGrpcTransport({ baseUrl: url });
  const health = createClient(Health, transport);
  try {
    for (;;) {
      if (gone) throw new Error(`${argv.join(" ")} exited before serving`);
      try {
        const r = await health.check({ service: "" }, { timeoutMs: 1000 });
        if (r.status === HealthCheckResponse_ServingStatus.SERVING) return performance.now() - started;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

/** Milliseconds from spawn to exit of a command that must exit with code 0. */
async function commandTime(argv: string[]): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, argv, { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`${argv.join(" ")} exited with ${code}`);
  return performance.now() - started;
}

const exists = (path: string) => existsSync(new URL(`../${path}`, import.meta.url));
const cliSource = exists("cli/main.ts") ? "cli/main.ts" : "client/cli/main.ts";
const servers: [string, string[]][] = [["node --import tsx server/main.ts", ["--import", "tsx", "server/main.ts"]]];
if (exists("dist/server/main.js")) servers.push(["node dist/server/main.js", ["dist/server/main.js"]]);
const commands: [string, string[]][] = [
  [`node --import tsx ${cliSource} --help`, ["--import", "tsx", cliSource, "--help"]],
  ["node bin/fencekeeper.js --help", ["bin/fencekeeper.js", "--help"]],
];
if (exists("dist/cli/main.js")) commands.push(["node dist/cli/main.js --help", ["dist/cli/main.js", "--help"]]);

const etcd = await startEtcd();
try {
  console.log(`median of ${runs} runs (ms), first run of each discarded as warm-up`);
  for (const [name, argv] of servers) {
    await serverStartup(argv, etcd.endpoint, -1);
    const times: number[] = [];
    for (let i = 0; i < runs; i++) times.push(await serverStartup(argv, etcd.endpoint, i));
    console.log(`${median(times).toFixed(0).padStart(6)}  to SERVING: ${name}   (runs: ${times.map((t) => t.toFixed(0)).join(" ")})`);
  }
  for (const [name, argv] of commands) {
    await commandTime(argv);
    const times: number[] = [];
    for (let i = 0; i < runs; i++) times.push(await commandTime(argv));
    console.log(`${median(times).toFixed(0).padStart(6)}  to exit:    ${name}   (runs: ${times.map((t) => t.toFixed(0)).join(" ")})`);
  }
} finally {
  await etcd.destroy();
}
