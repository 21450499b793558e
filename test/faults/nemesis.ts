// The nemesis: the faults of a run, injected at random moments, alone or several at once (a group, in a
// random combination from the seed), each group healed before the next. The faults are the article's (a client paused past its TTL, a partition between a client and
// the service, a slow network) and those etcd and the service themselves suffer (a replica crashed, an
// etcd member frozen, the etcd leader killed, the whole etcd cluster restarted from its data).
import type { EtcdCluster } from "./etcd-cluster.js";
import type { FaultProxy } from "./fault-proxy.js";
import { planFlood, type FloodPlan } from "./flood.js";
import type { Network } from "./netns.js";
import { injectPartition, PARTITION_NEMESES } from "./partitions.js";
import type { Replica } from "./replicas.js";
import type { Rng } from "./rng.js";

export const NEMESES = [
  "pause-client",
  "partition-client",
  "slow-network",
  "kill-replica",
  "pause-etcd-member",
  "kill-etcd-leader",
  "restart-etcd",
] as const;
/**
 * Abuse of the service by others than the workload: a KeepAlive flood from another caller (flood.ts), and
 * etcd filled to its quota (quota.ts). No root needed.
 */
export const ABUSE_NEMESES = ["keepalive-flood", "etcd-quota"] as const;
/** NEMESES, ABUSE_NEMESES and the network nemeses (partitions.ts), which need the run's network namespaces. */
export const ALL_NEMESES = [...NEMESES, ...ABUSE_NEMESES, ...PARTITION_NEMESES] as const;
export type Nemesis = (typeof ALL_NEMESES)[number];

/** A client process as the nemesis sees it: it can be frozen, and some talk through proxies. */
export interface Victim {
  name: string;
  pause(): void;
  resume(): void;
  /** One proxy per replica, for a client that talks through proxies; empty otherwise. */
  proxies: FaultProxy[];
}

export interface World {
  cluster: EtcdCluster;
  replicas: Replica[];
  clients: Victim[];
  /** The longest TTL the clients ask for, in ms: a pause past it makes a holder lose its lease. */
  maxTtlMs: number;
  /** The members' and replicas' network namespaces, when the run has them. */
  net?: Network;
  /** The abuse nemeses' actions (profile.ts binds them to the run's replicas, credentials and history). */
  abuse?: {
    flood(plan: FloodPlan): Promise<string>;
    fillQuota(holdMs: number): Promise<string>;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The nemeses that touch etcd: while one runs, etcd may renew every lease to its full TTL (a new leader). */
export const ETCD_NEMESES: readonly Nemesis[] = ["pause-etcd-member", "kill-etcd-leader", "restart-etcd", ...PARTITION_NEMESES];

/** One fault of the schedule: when it ran (ms since the epoch), what, and on what. */
export interface ScheduledFault {
  nemesis: Nemesis;
  target: string;
  start: number;
  end: number;
  what: string;
}

/** A fault chosen, with every random choice made (so that a seed reproduces it), not yet run. */
export interface PlannedFault {
  nemesis: Nemesis;
  target: string;
  /** When it starts, after its group does. */
  offsetMs: number;
  run(): Promise<{ what: string; target: string }>;
}

/**
 * Whether two faults may run at once: not two replica kills, not a whole-cluster restart beside another
 * etcd fault (it stops every member anyway), and never two faults on one target. Everything else may
 * overlap: a member frozen while the leader is killed leaves etcd without a quorum, which is the point.
 */
function compatible(a: PlannedFault | Nemesis, b: Nemesis): boolean {
  const k = typeof a === "string" ? a : a.nemesis;
  if (k === b) return false;
  // A network fault cuts members and replicas: alone among the faults that touch etcd or the replicas.
  const network = (x: Nemesis) => (PARTITION_NEMESES as readonly string[]).includes(x);
  const touches = (x: Nemesis) => ETCD_NEMESES.includes(x) || x === "kill-replica" || (ABUSE_NEMESES as readonly string[]).includes(x);
  if ((network(k) && touches(b)) || (network(b) && touches(k))) return false;
  // etcd filled to its quota is healed by compacting and defragmenting every member: no other etcd
  // fault, replica kill or flood beside it (its refusals are then etcd's space, nothing else).
  const quotaExcludes = (x: Nemesis) => ETCD_NEMESES.includes(x) || x === "kill-replica" || x === "keepalive-flood";
  if ((k === "etcd-quota" && quotaExcludes(b)) || (b === "etcd-quota" && quotaExcludes(k))) return false;
  if ((k === "restart-etcd" && ETCD_NEMESES.includes(b)) || (b === "restart-etcd" && ETCD_NEMESES.includes(k))) return false;
  return true;
}

/**
 * The next group of faults to run together: the first of the queue, then up to size-1 more of it that may
 * overlap with those chosen (taken out of the queue), each on a target of its own, each starting after a
 * random offset. Every random choice is made here, in order, so that the schedule follows from the seed.
 */
export function planGroup(queue: Nemesis[], size: number, w: World, rng: Rng): PlannedFault[] {
  const group: PlannedFault[] = [];
  const taken = new Set<string>();
  for (let i = 0; i < queue.length && group.length < size; ) {
    const kind = queue[i];
    if (!group.every((g) => compatible(g, kind))) {
      i++;
      continue;
    }
    const p = plan(kind, w, rng, taken, group.length === 0 ? 0 : rng.int(0, 1_500));
    if (!p) {
      i++;
      continue;
    }
    queue.splice(i, 1);
    taken.add(p.target);
    group.push(p);
  }
  return group;
}

/** Runs a group of faults side by side; resolves with each as it ran, once the world is whole again. */
export async function runGroup(group: PlannedFault[]): Promise<ScheduledFault[]> {
  return Promise.all(
    group.map(async (p) => {
      await sleep(p.offsetMs);
      const start = Date.now();
      const { what, target } = await p.run();
      return { nemesis: p.nemesis, target, start, end: Date.now(), what };
    }),
  );
}

/** Injects one fault and heals it; resolves with what was done, once the world is whole again. */
export async function inject(kind: Nemesis, w: World, rng: Rng): Promise<string> {
  const p = plan(kind, w, rng, new Set(), 0);
  if (!p) throw new Error(`no target for ${kind}`);
  return (await p.run()).what;
}

function plan(kind: Nemesis, w: World, rng: Rng, taken: Set<string>, offsetMs: number): PlannedFault | undefined {
  const free = <T extends { name: string }>(xs: T[]) => xs.filter((x) => !taken.has(x.name));
  const planned = (target: string, run: () => Promise<{ what: string; target?: string }>): PlannedFault => ({
    nemesis: kind,
    target,
    offsetMs,
    run: async () => {
      const r = await run();
      return { what: r.what, target: r.target ?? target };
    },
  });
  switch (kind) {
    case "pause-client": {
      const cs = free(w.clients);
      if (cs.length === 0) return undefined;
      const c = rng.pick(cs);
      const ms = w.maxTtlMs + rng.int(500, 2_000);
      return planned(c.name, async () => {
        c.pause();
        await sleep(ms);
        c.resume();
        return { what: `SIGSTOP ${c.name} for ${ms} ms` };
      });
    }
    case "partition-client":
    case "slow-network": {
      const cs = free(w.clients.filter((x) => x.proxies.length > 0));
      if (cs.length === 0) return undefined;
      const c = rng.pick(cs);
      const ms = rng.int(1_500, 4_500);
      const mode = kind === "slow-network" ? ({ kind: "delay", ms: rng.int(100, 800) } as const) : rng.pick([{ kind: "stall" }, { kind: "cut" }] as const);
      return planned(c.name, async () => {
        for (const p of c.proxies) p.set(mode);
        await sleep(ms);
        for (const p of c.proxies) p.heal();
        return { what: `${mode.kind}${mode.kind === "delay" ? ` ${mode.ms} ms` : ""} between ${c.name} and the service for ${ms} ms` };
      });
    }
    case "kill-replica": {
      const rs = free(w.replicas);
      if (rs.length === 0) return undefined;
      const r = rng.pick(rs);
      const ms = rng.int(200, 2_000);
      return planned(r.name, async () => {
        await r.kill();
        await sleep(ms);
        await r.restart();
        return { what: `SIGKILL replica ${r.name}, restarted after ${ms} ms` };
      });
    }
    case "pause-etcd-member": {
      const ms0 = free(w.cluster.members);
      if (ms0.length === 0) return undefined;
      const m = rng.pick(ms0);
      const ms = rng.int(1_500, 5_000);
      return planned(`etcd ${m.name}`, async () => {
        w.cluster.pauseMember(m);
        await sleep(ms);
        w.cluster.resumeMember(m);
        return { what: `SIGSTOP etcd ${m.name} for ${ms} ms` };
      });
    }
    case "kill-etcd-leader": {
      const ms = rng.int(500, 3_000);
      // The leader is etcd's choice, known only when the fault starts.
      return planned("etcd leader", async () => {
        const leader = await w.cluster.waitForLeader();
        await w.cluster.stopMember(leader, "SIGKILL");
        await sleep(ms);
        await w.cluster.startMember(leader);
        await w.cluster.waitForLeader();
        return { what: `SIGKILL the etcd leader ${leader.name}, restarted after ${ms} ms`, target: `etcd ${leader.name}` };
      });
    }
    case "restart-etcd": {
      // Stopped cleanly, or killed outright (etcd killed and back within seconds): either way started
      // again from its data.
      const ms = rng.int(200, 1_500);
      const signal = rng.pick(["SIGTERM", "SIGKILL"] as const);
      return planned("etcd", async () => {
        await w.cluster.stopAll(signal);
        await sleep(ms);
        await w.cluster.startAll();
        return { what: `${signal === "SIGKILL" ? "killed" : "stopped"} all etcd members, started them again from their data after ${ms} ms` };
      });
    }
    case "keepalive-flood": {
      if (!w.abuse) return undefined;
      const p = planFlood(rng);
      return planned("KeepAlive", async () => ({ what: await w.abuse!.flood(p) }));
    }
    case "etcd-quota": {
      if (!w.abuse) return undefined;
      const hold = rng.int(1_500, 3_000);
      return planned("etcd space", async () => ({ what: await w.abuse!.fillQuota(hold) }));
    }
    default:
      // A network nemesis (partitions.ts) makes its choices when it starts; it never shares a group with
      // another network or etcd fault (compatible), so the seed still fixes the order of those choices.
      return planned("network", async () => ({ what: await injectPartition(kind, w, rng) }));
  }
}
