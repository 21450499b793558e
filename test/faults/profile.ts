// One fault run: a 3-member etcd cluster, server replicas on it, client processes doing random
// operations (some through fault proxies), the nemesis injecting faults until the run has its
// operations and every fault at least once; then the clients stop, etcd's history is read back and the
// checker judges the clients' history against it.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { KeyLayout } from "../../server/etcd/keys.js";
import { check, type CheckResult } from "./checker.js";
import { EtcdCluster } from "./etcd-cluster.js";
import { readHistory, type EtcdTruth } from "./etcd-history.js";
import { FaultProxy } from "./fault-proxy.js";
import { parseOp, type Op } from "./history.js";
import { inject, NEMESES, type Nemesis, type Victim, type World } from "./nemesis.js";
import { Network } from "./netns.js";
import { PARTITION_NEMESES } from "./partitions.js";
import { Replica } from "./replicas.js";
import { Rng } from "./rng.js";
import { Soak, type SoakSummary } from "./soak.js";
import type { WorkerConfig } from "./worker.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const PREFIX = "/fk-faults/";
/** The TTLs the workers ask for are 2 and 3 s. */
const MAX_TTL_MS = 3_000;

export interface ProfileOptions {
  /** Operations to reach (every attempt of every kind counts once). */
  ops: number;
  seed: number;
  workers: number;
  replicas: number;
  resources: number;
  /** Calm between two faults, ms. */
  calmMs: [number, number];
  /** Ends the run after this long even short of its operations (once every fault happened); 0: no limit. */
  maxMs?: number;
  /** Samples RSS and open descriptors every this many ms (0: not at all). */
  soakIntervalMs: number;
  /** The faults to inject, each at least once (default NEMESES); a network nemesis (partitions.ts)
   * puts the members and replicas in network namespaces of their own (netns.ts). */
  nemeses?: readonly Nemesis[];
  log?: (line: string) => void;
}

export const SHORT: Omit<ProfileOptions, "seed"> = {
  ops: 5_000,
  workers: 8,
  replicas: 2,
  resources: 8,
  calmMs: [1_000, 3_000],
  soakIntervalMs: 0,
  nemeses: [...NEMESES, "isolate-etcd-leader", "cut-replica"],
};
export const LONG: Omit<ProfileOptions, "seed" | "ops"> = { workers: 8, replicas: 3, resources: 8, calmMs: [2_000, 8_000], soakIntervalMs: 5_000 };

export interface RunResult {
  options: ProfileOptions;
  ops: Op[];
  faults: Map<Nemesis, number>;
  faultLog: string[];
  check: CheckResult;
  truth: EtcdTruth;
  resources: string[];
  soak?: SoakSummary[];
  durationMs: number;
}

class WorkerProcess implements Victim {
  readonly process: ChildProcess;
  readonly exited: Promise<void>;
  readonly stderr: string[] = [];

  constructor(
    readonly name: string,
    config: WorkerConfig,
    readonly proxies: FaultProxy[],
    onOp: (op: Op) => void,
  ) {
    this.process = spawn(process.execPath, ["--import", "tsx", "test/faults/worker.ts", JSON.stringify(config)], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    this.exited = new Promise((resolve) => this.process.once("exit", () => resolve()));
    createInterface({ input: this.process.stdout! }).on("line", (l) => {
      const op = parseOp(l);
      if (op) onOp(op);
    });
    createInterface({ input: this.process.stderr! }).on("line", (l) => {
      this.stderr.push(l);
      if (this.stderr.length > 50) this.stderr.shift();
    });
  }

  pause(): void {
    this.process.kill("SIGSTOP");
  }

  resume(): void {
    this.process.kill("SIGCONT");
  }

  async stop(): Promise<void> {
    this.resume();
    this.process.stdin!.write("stop\n");
    const t = setTimeout(() => this.process.kill("SIGKILL"), 30_000);
    await this.exited;
    clearTimeout(t);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runProfile(o: ProfileOptions): Promise<RunResult> {
  const log = o.log ?? (() => {});
  const started = Date.now();
  const rng = new Rng(o.seed);
  const resources = Array.from({ length: o.resources }, (_, i) => `res-${i}`);
  const ops: Op[] = [];
  const kinds = o.nemeses ?? NEMESES;
  const faults = new Map<Nemesis, number>(kinds.map((n) => [n, 0]));
  const faultLog: string[] = [];

  const net = kinds.some((k) => (PARTITION_NEMESES as readonly string[]).includes(k))
    ? await Network.create([...["m0", "m1", "m2"], ...Array.from({ length: o.replicas }, (_, i) => `r${i}`)])
    : undefined;
  if (net) log(`network ${net.subnet}.0/24: namespaces ${net.id}-<node>, harness ${net.hostAddr}`);
  const cluster = await EtcdCluster.start(3, net).catch(async (e) => {
    await net?.destroy();
    throw e;
  });
  const replicas: Replica[] = [];
  const workers: WorkerProcess[] = [];
  const proxies: FaultProxy[] = [];
  let soak: Soak | undefined;
  // However this process ends (short of SIGKILL), the replicas and clients it started end with it, as
  // the etcd members do (etcd-cluster.ts).
  const killAll = () => {
    for (const pid of [...replicas.map((r) => r.pid), ...workers.map((w) => w.process.pid)]) {
      try {
        if (pid) process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
  };
  process.once("exit", killAll);
  try {
    for (let i = 0; i < o.replicas; i++) replicas.push(await Replica.start(`r${i}`, cluster.endpoints, PREFIX, net));
    log(`etcd ${cluster.endpoints.join(" ")}; replicas ${replicas.map((r) => r.url).join(" ")}`);
    for (let i = 0; i < o.workers; i++) {
      const via = i % 2 === 0 ? "grpc" : "sdk";
      const proxied = i >= o.workers / 2;
      const mine = proxied ? await Promise.all(replicas.map((r) => FaultProxy.start(r.url))) : [];
      proxies.push(...mine);
      const name = `c${i}`;
      const config: WorkerConfig = { client: name, via, servers: proxied ? mine.map((p) => p.url) : replicas.map((r) => r.url), seed: rng.int(1, 2 ** 31), resources, keys: 4 };
      workers.push(new WorkerProcess(`${name} (${via}${proxied ? ", proxied" : ""})`, config, mine, (op) => ops.push(op)));
    }
    if (o.soakIntervalMs > 0) {
      soak = new Soak(() => [...replicas.map((r) => ({ role: "server" as const, pid: r.pid })), ...workers.map((w) => ({ role: "client" as const, pid: w.process.pid }))], o.soakIntervalMs);
    }
    const world: World = { cluster, replicas, clients: workers, maxTtlMs: MAX_TTL_MS, net };

    // Faults until the run has its operations and every fault happened; each round injects every kind
    // once, in an order of its own.
    let queue: Nemesis[] = [];
    let lastReport = 0;
    const enough = () => ops.length >= o.ops || (o.maxMs !== undefined && o.maxMs > 0 && Date.now() - started > o.maxMs);
    const done = () => enough() && [...faults.values()].every((n) => n > 0);
    while (!done()) {
      await sleep(rng.int(...o.calmMs));
      for (const r of replicas) r.trimLogs();
      if (done()) break;
      if (queue.length === 0) queue = rng.shuffle([...kinds]);
      const kind = queue.shift()!;
      const what = await inject(kind, world, rng);
      faults.set(kind, faults.get(kind)! + 1);
      faultLog.push(`${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);
      if (Date.now() - lastReport > 15_000) {
        lastReport = Date.now();
        log(`${((Date.now() - started) / 1000).toFixed(0)} s: ${ops.length} operations, ${[...faults.values()].reduce((a, b) => a + b, 0)} faults; last: ${what}`);
      }
    }
    await Promise.all(workers.map((w) => w.stop()));
    const soakSummary = soak?.stop();
    await Promise.all(replicas.map((r) => r.stop()));
    log(`${ops.length} operations; reading etcd's history back`);
    const truth = await readHistory(cluster.endpoints, PREFIX);
    log(`${truth.events.length} etcd events up to revision ${truth.revision}; checking`);
    const result = check(ops, truth, new KeyLayout(PREFIX), resources);
    return { options: o, ops, faults, faultLog, check: result, truth, resources, soak: soakSummary, durationMs: Date.now() - started };
  } finally {
    process.removeListener("exit", killAll);
    soak?.stop();
    for (const w of workers) if (w.process.exitCode === null && w.process.signalCode === null) w.process.kill("SIGKILL");
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(replicas.map((r) => r.kill()));
    try {
      await cluster.destroy();
    } finally {
      await net?.destroy();
    }
  }
}
