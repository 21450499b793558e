// A real Redis for tests: a throwaway redis-server (Debian's `redis-server` package; scripts/setup.sh --test
// installs it) in a fresh temporary folder on a free loopback port, removed after; or a small Redis
// Cluster of three masters (cluster-enabled, joined by `redis-cli --cluster create`, no replicas). Redis
// runs as root without complaint, so no other user is needed. Nothing is persisted: no RDB, no AOF.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "../../server/etcd/embedded.js";

export const REDIS_INSTALL_HINT = "sudo apt-get install -y redis-server   (Debian/Ubuntu; or run bash scripts/setup.sh --test as root)";
const run = promisify(execFile);

export interface TestRedis {
  readonly host: "127.0.0.1";
  /** The single server's port, or the cluster's nodes' ports. */
  readonly ports: number[];
  /** Stops the server(s) and removes the folder. */
  destroy(): Promise<void>;
}

export function redisAvailable(): boolean {
  return existsSync("/usr/bin/redis-server") || (process.env.PATH ?? "").split(":").some((d) => existsSync(join(d, "redis-server")));
}

/** One redis-server. */
export async function startRedis(): Promise<TestRedis> {
  return start(1, false);
}

/** Three masters of a Redis Cluster, all 16384 slots assigned, state ok on every node. */
export async function startRedisCluster(): Promise<TestRedis> {
  return start(3, true);
}

async function start(count: number, cluster: boolean): Promise<TestRedis> {
  if (!redisAvailable()) throw new Error(`the Redis tests need Debian's redis-server package. Install it with:\n  ${REDIS_INSTALL_HINT}`);
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-redis-"));
  const nodes: { port: number; child: ChildProcess; exited: Promise<void>; log: string[] }[] = [];
  const destroy = async () => {
    for (const n of nodes) if (n.child.exitCode === null && n.child.signalCode === null) n.child.kill("SIGKILL");
    await Promise.all(nodes.map((n) => n.exited));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      const nodeDir = join(dir, String(port));
      mkdirSync(nodeDir);
      const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", nodeDir, "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no"];
      // The cluster bus needs a port of its own (port + 10000 by default, which may be taken).
      if (cluster) args.push("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000", "--cluster-port", String(await freePort()));
      const log: string[] = [];
      const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout!.on("data", (d) => log.push(String(d)));
      child.stderr!.on("data", (d) => log.push(String(d)));
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      // However this process ends (short of SIGKILL), Redis does not outlive it.
      const killOnExit = () => child.kill("SIGKILL");
      process.once("exit", killOnExit);
      child.once("exit", () => process.removeListener("exit", killOnExit));
      nodes.push({ port, child, exited, log });
    }
    for (const n of nodes) await until(`redis-server on port ${n.port} to answer PING`, async () => {
      if (n.child.exitCode !== null) throw new Error(`redis-server exited at start (${n.child.exitCode}):\n${n.log.join("")}`);
      return (await cli(n.port, "PING")) === "PONG";
    });
    if (cluster) {
      const addrs = nodes.map((n) => `127.0.0.1:${n.port}`);
      await run("redis-cli", ["--cluster", "create", ...addrs, "--cluster-replicas", "0", "--cluster-yes"], { timeout: 30_000 });
      for (const n of nodes) await until(`cluster node ${n.port} to see the cluster ok`, async () => (await cli(n.port, "CLUSTER", "INFO")).includes("cluster_state:ok"));
    }
  } catch (err) {
    await destroy();
    throw err;
  }
  return { host: "127.0.0.1", ports: nodes.map((n) => n.port), destroy };
}

async function cli(port: number, ...command: string[]): Promise<string> {
  try {
    return (await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...command], { timeout: 5_000 })).stdout.trim();
  } catch {
    return "";
  }
}

async function until(what: string, ok: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`waited 30 s for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
