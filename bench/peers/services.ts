// The servers of the peers benchmark, each a process of its own on free loopback ports in a temporary
// folder, with its pid for CPU and memory from /proc: etcd (the one fencekeeper uses, and the one etcd's
// Mutex uses), fencekeeper's server, ZooKeeper (Debian's package, standalone) and Redis (Debian's
// redis-server). Their durability settings are their defaults: etcd fsyncs its WAL, ZooKeeper its log
// (forceSync=yes), Redis snapshots on its default schedule and keeps no AOF.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startEmbeddedEtcd } from "../../server/etcd/embedded.js";
import { startServer } from "../../test/harness/server.js";

export interface Service {
  readonly name: string;
  readonly pid: number;
  /** host:port or URL, as its clients take it. */
  readonly address: string;
  readonly version: string;
  stop(): Promise<void>;
}

export const ZOOKEEPER_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar";
export const zookeeperAvailable = () => existsSync("/usr/share/java/zookeeper.jar");

export async function startEtcdService(): Promise<Service & { endpoint: string }> {
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-peers-etcd-"));
  const etcd = await startEmbeddedEtcd({ dataDir: dir });
  const version = await output("etcd", ["--version"]);
  return {
    name: "etcd",
    pid: etcd.process.pid!,
    address: etcd.endpoint,
    endpoint: etcd.endpoint,
    version: /etcd Version: (\S+)/.exec(version)?.[1] ?? "?",
    async stop() {
      await etcd.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function startFencekeeperService(etcd: string): Promise<Service> {
  // Info, not the harness's debug: a log line per call would be measured too.
  const server = await startServer({ etcd, args: ["--log-level", "info"] });
  return {
    name: "fencekeeper",
    pid: server.process.pid!,
    address: server.url,
    version: "this checkout",
    async stop() {
      await server.stop();
    },
  };
}

export async function startRedisService(): Promise<Service> {
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-peers-redis-"));
  const port = await freePort();
  // Redis's defaults but for the port, the folder and the binding.
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no", "--protected-mode", "no"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const version = /v=(\S+)/.exec(await output("redis-server", ["--version"]))?.[1] ?? "?";
  return service("redis", child, `127.0.0.1:${port}`, version, port, dir);
}

export async function startZooKeeperService(): Promise<Service> {
  if (!zookeeperAvailable()) throw new Error("ZooKeeper is missing: sudo apt-get install -y zookeeper (scripts/bench-peers.sh does it as root)");
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-peers-zookeeper-"));
  mkdirSync(join(dir, "data"));
  const port = await freePort();
  // Debian's zoo.cfg but for the port and the folder; minSessionTimeout 2 s (the default floor is two
  // ticks, 4 s), so that Curator can ask for the 2 s TTL of the crash measurement; no admin server.
  writeFileSync(
    join(dir, "zoo.cfg"),
    [`tickTime=2000`, `dataDir=${join(dir, "data")}`, `clientPort=${port}`, `clientPortAddress=127.0.0.1`, `minSessionTimeout=2000`, `admin.enableServer=false`, `4lw.commands.whitelist=srvr`].join("\n") + "\n",
  );
  const child = spawn("java", ["-cp", ZOOKEEPER_CLASSPATH, "org.apache.zookeeper.server.ZooKeeperServerMain", join(dir, "zoo.cfg")], { stdio: ["ignore", "pipe", "pipe"] });
  const srvr = await until(async () => {
    const answer = await fourLetters(port, "srvr").catch(() => "");
    return answer.includes("Mode:") ? answer : undefined;
  }, 60_000, child);
  const version = /Zookeeper version: ([0-9.]+)/.exec(srvr)?.[1] ?? "?";
  return service("zookeeper", child, `127.0.0.1:${port}`, version, port, dir);
}

async function service(name: string, child: ChildProcess, address: string, version: string, port: number, dir: string): Promise<Service> {
  const log: string[] = [];
  child.stdout!.on("data", (d) => log.push(String(d)));
  child.stderr!.on("data", (d) => log.push(String(d)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  await until(() => listening(port).then((ok) => ok || undefined), 60_000, child).catch((err) => {
    child.kill("SIGKILL");
    throw new Error(`${name}: ${(err as Error).message}\n${log.join("").slice(-2000)}`);
  });
  return {
    name,
    pid: child.pid!,
    address,
    version,
    async stop() {
      process.off("exit", killOnExit);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function until<T>(probe: () => Promise<T | undefined>, ms: number, child: ChildProcess): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited with ${child.exitCode ?? child.signalCode} before serving`);
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`not serving after ${ms / 1000} s`);
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

function fourLetters(port: number, word: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1");
    let text = "";
    s.setTimeout(2000, () => (s.destroy(), reject(new Error("timeout"))));
    s.once("connect", () => s.write(word));
    s.on("data", (d) => (text += String(d)));
    s.once("close", () => resolve(text));
    s.once("error", reject);
  });
}

function output(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { stdio: ["ignore", "pipe", "ignore"] });
    let text = "";
    c.stdout!.on("data", (d) => (text += String(d)));
    c.once("close", () => resolve(text));
    c.once("error", () => resolve(""));
  });
}
