// The nemesis: the faults of a run, injected one at a time at random moments, each healed before the
// next. The faults are the article's (a client paused past its TTL, a partition between a client and
// the service, a slow network) and those etcd and the service themselves suffer (a replica crashed, an
// etcd member frozen, the etcd leader killed, the whole etcd cluster restarted from its data).
import type { EtcdCluster } from "./etcd-cluster.js";
import type { FaultProxy } from "./fault-proxy.js";
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
/** NEMESES and the network nemeses (partitions.ts), which need the run's network namespaces. */
export const ALL_NEMESES = [...NEMESES, ...PARTITION_NEMESES] as const;
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
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Injects one fault and heals it; resolves with what was done, once the world is whole again. */
export async function inject(kind: Nemesis, w: World, rng: Rng): Promise<string> {
  switch (kind) {
    case "pause-client": {
      const c = rng.pick(w.clients);
      const ms = w.maxTtlMs + rng.int(500, 2_000);
      c.pause();
      await sleep(ms);
      c.resume();
      return `SIGSTOP ${c.name} for ${ms} ms`;
    }
    case "partition-client":
    case "slow-network": {
      const c = rng.pick(w.clients.filter((x) => x.proxies.length > 0));
      const ms = rng.int(1_500, 4_500);
      const mode = kind === "slow-network" ? ({ kind: "delay", ms: rng.int(100, 800) } as const) : rng.pick([{ kind: "stall" }, { kind: "cut" }] as const);
      for (const p of c.proxies) p.set(mode);
      await sleep(ms);
      for (const p of c.proxies) p.heal();
      return `${mode.kind}${mode.kind === "delay" ? ` ${mode.ms} ms` : ""} between ${c.name} and the service for ${ms} ms`;
    }
    case "kill-replica": {
      const r = rng.pick(w.replicas);
      const ms = rng.int(200, 2_000);
      await r.kill();
      await sleep(ms);
      await r.restart();
      return `SIGKILL replica ${r.name}, restarted after ${ms} ms`;
    }
    case "pause-etcd-member": {
      const m = rng.pick(w.cluster.members);
      const ms = rng.int(1_500, 5_000);
      w.cluster.pauseMember(m);
      await sleep(ms);
      w.cluster.resumeMember(m);
      return `SIGSTOP etcd ${m.name} for ${ms} ms`;
    }
    case "kill-etcd-leader": {
      const leader = await w.cluster.waitForLeader();
      const ms = rng.int(500, 3_000);
      await w.cluster.stopMember(leader, "SIGKILL");
      await sleep(ms);
      await w.cluster.startMember(leader);
      await w.cluster.waitForLeader();
      return `SIGKILL the etcd leader ${leader.name}, restarted after ${ms} ms`;
    }
    case "restart-etcd": {
      const ms = rng.int(200, 1_500);
      await w.cluster.stopAll("SIGTERM");
      await sleep(ms);
      await w.cluster.startAll();
      return `stopped all etcd members, started them again from their data after ${ms} ms`;
    }
    default:
      return injectPartition(kind, w, rng);
  }
}
