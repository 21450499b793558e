// One fault run: a 3-member etcd cluster, server replicas on it, client processes doing random
// operations (some through fault proxies), the nemesis injecting faults until the run has its
// operations and every fault at least once; then the clients stop, etcd's history is read back and the
// checker judges the clients' history against it.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { nodeProgram } from "../harness/programs.js";
import { DENIED_CLIENT, DENIED_RESOURCES, IMPOSTOR_CLIENT, OTHER_PRINCIPAL, policyDenies, PREEMPTING_CLIENT, RunAuth } from "./auth.js";
import { describeFlood, flood, FLOODER } from "./flood.js";
import { fillToQuota, quotaFor } from "./quota.js";
import { check, type CheckResult, type EtcdDisruption } from "./checker.js";
import { EtcdCluster } from "./etcd-cluster.js";
import { HistoryLog, readHistory, type EtcdTruth } from "./etcd-history.js";
import { FaultProxy } from "./fault-proxy.js";
import { parseOp, type Op, type OpKind } from "./history.js";
import { Layout } from "./layout.js";
import { ETCD_NEMESES, NEMESES, planGroup, runGroup, type Nemesis, type ScheduledFault, type Victim, type World } from "./nemesis.js";
import { Network } from "./netns.js";
import { PARTITION_NEMESES } from "./partitions.js";
import { Replica } from "./replicas.js";
import { Rng } from "./rng.js";
import { saveEtcd } from "./saved-run.js";
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
  /** Calm between two groups of faults, ms. */
  calmMs: [number, number];
  /** The most faults a group runs at once (1: one at a time). */
  maxOverlap: number;
  /** Ends the run after this long even short of its operations (once every fault happened); 0: no limit. */
  maxMs?: number;
  /** The acknowledged operations of each kind a run must reach (its report shows them). */
  floors?: Partial<Record<OpKind, number>>;
  /** Samples RSS and open descriptors every this many ms (0: not at all). */
  soakIntervalMs: number;
  /** The faults to inject, each at least once (default NEMESES); a network nemesis (partitions.ts)
   * puts the members and replicas in network namespaces of their own (netns.ts). */
  nemeses?: readonly Nemesis[];
  /**
   * Keeps the run in this file (saved-run.ts): the client history line by line as it comes (so that a
   * run that fails keeps what it did, and etcd's data and logs are kept too), etcd's history once read,
   * before the check, so that a long run's check can be run again.
   */
  history?: string;
  log?: (line: string) => void;
}

/**
 * The acknowledged operations of each kind the short profile must reach, about a third of what a correct
 * server gives it: a server that refuses what it should accept (or everything) falls below, even where
 * no single refusal can be shown wrong.
 */
export const SHORT_FLOORS: Partial<Record<OpKind, number>> = { acquire: 110, renew: 30, release: 50, put: 145, delete: 75, txn: 70, proclaim: 15, observe: 10 };

export const SHORT: Omit<ProfileOptions, "seed"> = {
  ops: 3_000,
  workers: 8,
  replicas: 2,
  resources: 8,
  calmMs: [1_000, 2_500],
  maxOverlap: 3,
  soakIntervalMs: 0,
  floors: SHORT_FLOORS,
  nemeses: [...NEMESES, "keepalive-flood", "etcd-quota", "isolate-etcd-leader", "cut-replica"],
};
/**
 * 24 clients on 16 resources: what keeps this machine's two cores busy (8 clients left them half idle:
 * about 60 operations a second; 24 give about 120, 32 no more), so that a million operations take under
 * three hours.
 */
export const LONG: Omit<ProfileOptions, "seed" | "ops"> = { workers: 24, replicas: 3, resources: 16, calmMs: [2_000, 8_000], maxOverlap: 3, soakIntervalMs: 5_000 };

export interface RunResult {
  options: ProfileOptions;
  ops: Op[];
  faults: Map<Nemesis, number>;
  faultLog: string[];
  /** Every fault as it ran: start, end, nemesis, target. */
  schedule: ScheduledFault[];
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
    const [node, ...program] = nodeProgram("test/faults/worker.ts");
    this.process = spawn(node, [...program, JSON.stringify(config)], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
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

/** The spans in which etcd may have renewed every lease to its full TTL: its faults'. */
export const disruptionsOf = (schedule: ScheduledFault[]): EtcdDisruption[] => schedule.filter((f) => ETCD_NEMESES.includes(f.nemesis)).map((f) => ({ start: f.start, end: f.end }));

/** The spans in which etcd was out of space (the etcd-quota nemesis's, from its fill to its heal). */
export const noSpaceOf = (schedule: ScheduledFault[]): EtcdDisruption[] => schedule.filter((f) => f.nemesis === "etcd-quota").map((f) => ({ start: f.start, end: f.end }));

/** Pairs of faults of the schedule that ran at the same time. */
export const overlapsOf = (schedule: ScheduledFault[]): number =>
  schedule.reduce((n, a, i) => n + schedule.slice(i + 1).filter((b) => a.start < b.end && b.start < a.end).length, 0);

export async function runProfile(o: ProfileOptions): Promise<RunResult> {
  const log = o.log ?? (() => {});
  const started = Date.now();
  const rng = new Rng(o.seed);
  const resources = Array.from({ length: o.resources }, (_, i) => `res-${i}`);
  // Plain-gRPC workers also acquire this one, as a counting semaphore (shared acquisitions of 2 permits).
  const semaphore = { resource: "sem-0", maxHolders: 2 };
  const ops: Op[] = [];
  const kinds = o.nemeses ?? NEMESES;
  const faults = new Map<Nemesis, number>(kinds.map((n) => [n, 0]));
  const faultLog: string[] = [];
  const schedule: ScheduledFault[] = [];
  const clientNames = Array.from({ length: o.workers }, (_, i) => `c${i}`);
  const replicaNames = Array.from({ length: o.replicas }, (_, i) => `r${i}`);

  const net = kinds.some((k) => (PARTITION_NEMESES as readonly string[]).includes(k)) ? await Network.create([...["m0", "m1", "m2"], ...replicaNames]) : undefined;
  if (net) log(`network ${net.subnet}.0/24: namespaces ${net.id}-<node>, harness ${net.hostAddr}`);
  const auth = await RunAuth.create(clientNames, [...resources, semaphore.resource], net ? replicaNames.map((r) => net.addr(r)) : []);
  const cluster = await EtcdCluster.start(3, net, kinds.includes("etcd-quota") ? quotaFor(o.ops) : undefined).catch(async (e) => {
    auth.destroy();
    await net?.destroy();
    throw e;
  });
  const replicas: Replica[] = [];
  const workers: WorkerProcess[] = [];
  const proxies: FaultProxy[] = [];
  let soak: Soak | undefined;
  const historyOut: WriteStream | undefined = o.history ? createWriteStream(o.history) : undefined;
  const closeHistory = () => new Promise<void>((resolve) => (historyOut && !historyOut.closed ? historyOut.end(resolve) : resolve()));
  let failed = true;
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
    for (let i = 0; i < o.replicas; i++) replicas.push(await Replica.start(`r${i}`, cluster.endpoints, PREFIX, net, auth.serverArgs));
    log(`etcd ${cluster.endpoints.join(" ")}; replicas ${replicas.map((r) => r.url).join(" ")}`);
    for (let i = 0; i < o.workers; i++) {
      const via = i % 2 === 0 ? "grpc" : "sdk";
      const proxied = i >= o.workers / 2;
      const mine = proxied ? await Promise.all(replicas.map((r) => FaultProxy.start(r.url))) : [];
      proxies.push(...mine);
      const name = `c${i}`;
      const config: WorkerConfig = { client: name, via, servers: proxied ? mine.map((p) => p.url) : replicas.map((r) => r.url), seed: rng.int(1, 2 ** 31), resources, keys: 4, semaphore, ...(await auth.credentials(name)), ...(name === PREEMPTING_CLIENT ? { preempt: 0.16 } : {}), ...(name === DENIED_CLIENT ? { denied: DENIED_RESOURCES } : {}), ...(name === IMPOSTOR_CLIENT ? { other: { principal: OTHER_PRINCIPAL, bearer: await auth.token(OTHER_PRINCIPAL), resources: resources.filter((r) => !DENIED_RESOURCES.includes(r)) } } : {}) };
      workers.push(new WorkerProcess(`${name} (${via}${proxied ? ", proxied" : ""}${config.bearer ? "" : ", mTLS"})`, config, mine, (op) => {
        ops.push(op);
        historyOut?.write(JSON.stringify(op) + "\n");
      }));
    }
    if (o.soakIntervalMs > 0) {
      soak = new Soak(
        () => [
          { name: "harness", role: "harness" as const, pid: process.pid },
          ...cluster.members.map((m) => ({ name: `etcd ${m.name}`, role: "etcd" as const, pid: m.process?.pid })),
          ...replicas.map((r, i) => ({ name: `replica r${i}`, role: "server" as const, pid: r.pid })),
          ...workers.map((w, i) => ({ name: `client c${i}`, role: "client" as const, pid: w.process.pid })),
        ],
        o.soakIntervalMs,
      );
    }
    const historyLog = new HistoryLog();
    const flooder = await auth.credentials(FLOODER);
    const abuse: World["abuse"] = {
      flood: async (plan) => describeFlood(plan, await flood(replicas.map((r) => r.url), flooder, plan)),
      fillQuota: (holdMs) => fillToQuota(cluster, PREFIX, historyLog, holdMs),
    };
    const world: World = { cluster, replicas, clients: workers, maxTtlMs: MAX_TTL_MS, net, abuse };

    // Faults until the run has its operations and every fault happened; each round injects every kind
    // once, in an order of its own, in groups of up to maxOverlap faults that run at once.
    let queue: Nemesis[] = [];
    let lastReport = 0;
    const enough = () => ops.length >= o.ops || (o.maxMs !== undefined && o.maxMs > 0 && Date.now() - started > o.maxMs);
    const done = () => enough() && [...faults.values()].every((n) => n > 0);
    const at = (t: number) => `${((t - started) / 1000).toFixed(1)} s`;
    while (!done()) {
      await sleep(rng.int(...o.calmMs));
      for (const r of replicas) r.trimLogs();
      if (done()) break;
      if (queue.length === 0) queue = rng.shuffle([...kinds]);
      const group = planGroup(queue, rng.int(1, o.maxOverlap), world, rng);
      const ran = await runGroup(group);
      for (const f of ran) {
        faults.set(f.nemesis, faults.get(f.nemesis)! + 1);
        schedule.push(f);
        faultLog.push(`${at(f.start)} to ${at(f.end)}: ${f.nemesis} on ${f.target}: ${f.what}`);
        log(`fault ${at(f.start)} to ${at(f.end)}: ${f.nemesis} on ${f.target}: ${f.what}`);
      }
      if (Date.now() - lastReport > 15_000) {
        lastReport = Date.now();
        log(`${((Date.now() - started) / 1000).toFixed(0)} s: ${ops.length} operations, ${[...faults.values()].reduce((a, b) => a + b, 0)} faults`);
      }
    }
    // A calm after the last group too, so that what its heal brings back (writes, after etcd's quota) is
    // in the history before the clients stop.
    await sleep(rng.int(...o.calmMs));
    await Promise.all(workers.map((w) => w.stop()));
    const soakSummary = soak?.stop();
    if (soak && o.history) soak.writeCsv(`${o.history}.soak.csv`);
    await Promise.all(replicas.map((r) => r.stop()));
    log(`${ops.length} operations; reading etcd's history back`);
    const truth = await readHistory(cluster.endpoints, PREFIX, undefined, historyLog);
    const judged = [...resources, semaphore.resource];
    if (o.history) {
      await closeHistory();
      saveEtcd(o.history, truth, judged, schedule);
      log(`history: ${o.history} (etcd's: ${o.history}.etcd.jsonl)`);
    }
    log(`${truth.events.length} etcd events up to revision ${truth.revision}; checking`);
    const result = check(ops, truth, new Layout(PREFIX), judged, disruptionsOf(schedule), policyDenies, noSpaceOf(schedule));
    failed = false;
    return { options: o, ops, faults, faultLog, schedule, check: result, truth, resources: judged, soak: soakSummary, durationMs: Date.now() - started };
  } catch (e) {
    // A run that fails (etcd that never came back, say) keeps what it did: the client history so far,
    // and etcd's data and logs.
    if (o.history) log(`the run failed after ${ops.length} operations; their history: ${o.history}; etcd's data and logs: ${cluster.dir}`);
    throw e;
  } finally {
    await closeHistory();
    process.removeListener("exit", killAll);
    soak?.stop();
    for (const w of workers) if (w.process.exitCode === null && w.process.signalCode === null) w.process.kill("SIGKILL");
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(replicas.map((r) => r.kill()));
    auth.destroy();
    try {
      await cluster.destroy(failed && o.history !== undefined);
    } finally {
      await net?.destroy();
    }
  }
}
