// The network nemeses, Jepsen's, on the run's network namespaces (netns.ts): links between etcd members
// and server replicas cut or made bad, while every node still reaches the harness and the clients (who
// run in the harness's namespace), so that what the clients see is the service behind a partition,
// not a partition in front of it. Each heals its own fault (others may be in force at the same time)
// and, when no other network fault is left, waits for etcd to have a leader again.
import type { World } from "./nemesis.js";
import type { NetFault } from "./netns.js";
import type { Replica } from "./replicas.js";
import type { Rng } from "./rng.js";

export const PARTITION_NEMESES = ["isolate-etcd-leader", "split-etcd", "cut-replica", "bridge-etcd", "netem-link"] as const;
export type PartitionNemesis = (typeof PARTITION_NEMESES)[number];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where the replicas stand in a split (each reaches the members of its side only): one on each side
 * when there are two or more, so that clients see both a replica that can reach a quorum and one that
 * cannot; the others at random. */
function sides(replicas: Replica[], rng: Rng): [string[], string[]] {
  const [first, second, ...rest] = rng.shuffle(replicas.map((r) => r.name));
  const a = [first];
  const b = second === undefined ? [] : [second];
  for (const r of rest) (rng.chance(0.5) ? a : b).push(r);
  return rng.chance(0.5) ? [a, b] : [b, a];
}

const list = (xs: string[]) => (xs.length ? xs.join(" ") : "none");

/** Injects one network fault and heals it; resolves with what was done, once etcd has a leader again. */
export async function injectPartition(kind: PartitionNemesis, w: World, rng: Rng): Promise<string> {
  const net = w.net;
  if (!net) throw new Error(`the ${kind} nemesis needs the run's network namespaces (a run whose nemeses include it has them)`);
  const members = w.cluster.members.map((m) => m.name);
  // Long enough for the members to elect a leader (election timeout 1 s) and for leases to expire
  // (TTL 2 to 3 s) on one side.
  const ms = rng.int(2_500, 6_000);
  let what: string;
  let fault: NetFault;
  switch (kind) {
    case "isolate-etcd-leader": {
      // The leader, as the members' status says, alone with the replicas that chose its side: they can
      // reach no quorum; the majority elects a new leader and serves the others.
      const leader = (await w.cluster.waitForLeader()).name;
      const [withLeader, withMajority] = sides(w.replicas, rng);
      fault = await net.partition([
        [leader, ...withLeader],
        [...members.filter((m) => m !== leader), ...withMajority],
      ]);
      what = `isolated the etcd leader ${leader} (with replicas: ${list(withLeader)}) from the other members (with: ${list(withMajority)})`;
      break;
    }
    case "split-etcd": {
      const [minority, ...majority] = rng.shuffle([...members]);
      const [withMinority, withMajority] = sides(w.replicas, rng);
      fault = await net.partition([
        [minority, ...withMinority],
        [...majority, ...withMajority],
      ]);
      what = `split etcd: ${minority} (with replicas: ${list(withMinority)}) | ${majority.join(" ")} (with: ${list(withMajority)})`;
      break;
    }
    case "cut-replica": {
      // It still answers its clients, with no etcd behind it.
      const r = rng.pick(w.replicas);
      fault = await net.partition([[r.name], members]);
      what = `cut replica ${r.name} from every etcd member`;
      break;
    }
    case "bridge-etcd": {
      // Two sides that share one member: it sees both (and may lead both), they do not see each other.
      const [left, bridge, right] = rng.shuffle([...members]);
      const [withLeft, withRight] = sides(w.replicas, rng);
      fault = await net.cut([left, right], ...withLeft.map((r): [string, string] => [r, right]), ...withRight.map((r): [string, string] => [r, left]));
      what = `bridge: ${left} (with replicas: ${list(withLeft)}) | ${right} (with: ${list(withRight)}), ${bridge} sees both`;
      break;
    }
    case "netem-link": {
      const pairs = linkChoices(members, w.replicas);
      const [a, b] = rng.pick(pairs);
      const shape = { delayMs: rng.int(50, 400), jitterMs: rng.int(10, 200), lossPct: rng.int(1, 20), reorderPct: rng.int(5, 50) };
      const shaped = await net.shape(a, b, shape);
      fault = shaped.fault;
      what = `${shaped.what} between ${a} and ${b}`;
      break;
    }
  }
  await sleep(ms);
  await net.heal(fault);
  // Another network fault still in force may keep etcd from a quorum: its own heal waits.
  if (net.inForce === 0) await w.cluster.waitForLeader();
  return `${what} for ${ms} ms`;
}

/** The links a shaped link can be: between two members, or between a replica and a member. */
function linkChoices(members: string[], replicas: Replica[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < members.length; i++) for (let j = i + 1; j < members.length; j++) pairs.push([members[i], members[j]]);
  for (const r of replicas) for (const m of members) pairs.push([r.name, m]);
  return pairs;
}
