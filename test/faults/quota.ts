// The etcd-quota nemesis: etcd filled to its --quota-backend-bytes (the run starts its members with a
// small quota, quotaFor(its operations), only when this nemesis is chosen) through a side prefix of its own, until it
// raises the NOSPACE alarm; held so for a while (the workload's writes and grants are refused
// RESOURCE_EXHAUSTED, ETCD_NO_SPACE: no verdict for those in flight as etcd filled, which etcd may have
// applied, and nothing written for the rest); then healed as an operator would:
// the filler deleted, the history compacted and every member defragmented (until its file is back to
// the live data it had), the alarm disarmed (until none is listed). Then it waits until etcd takes a write again.
//
// Compaction would lose the history the checker reads from revision 1, so the heal first reads it up to
// the compaction revision into the run's HistoryLog (etcd-history.ts): a marker key under the prefix,
// put before the fill and deleted (deletes pass the alarm) after the filler is, says where it ends.
import { randomBytes } from "node:crypto";
import { noop } from "cockatiel";
import { Etcd3 } from "etcd3";
import type { EtcdCluster, Member } from "./etcd-cluster.js";
import { HISTORY_GRPC_OPTIONS, watchUntil, type HistoryLog } from "./etcd-history.js";

/** The quota the members get when the run has this nemesis: far above what a short run writes, quick to fill. */
export const QUOTA_BYTES = 64 * 1024 * 1024;

/**
 * The quota for a run of this many operations: QUOTA_BYTES, and 64 bytes more for each operation. etcd's
 * live data grows all run: each write sent with an idempotency key leaves a record of about 280 bytes,
 * kept for the servers' --idempotency-ttl on a lease, and etcd renews every lease to its full TTL at each
 * leader change, which this run makes every minute or so; so none expires (a run's live data grew to
 * 33.9 MB in use, 123,115 records, after 822,503 operations, about 41 bytes an operation).
 */
export const quotaFor = (ops: number): number => QUOTA_BYTES + Math.ceil((ops * 64) / (1 << 20)) * (1 << 20);
/** Outside the servers' prefix: the checker never sees the filler. */
export const FILLER_PREFIX = "/fk-faults-filler/";
const CHUNK = 2 * 1024 * 1024;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const noSpace = (err: unknown) => /database space exceeded|NOSPACE/i.test(String((err as Error)?.message ?? err));

/**
 * The alarms raised, as etcd lists them. etcd answers the list through raft, after every entry before
 * it: once the NOSPACE alarm is listed, a write sent after is applied after the alarm, and so refused.
 */
export async function alarms(client: Etcd3): Promise<{ memberID: string; alarm: string }[]> {
  const res = await client.maintenance.alarm({ action: "Get", alarm: "None", memberID: 0 });
  return res.alarms.map((a) => ({ memberID: String(a.memberID), alarm: String(a.alarm) }));
}

/**
 * Defragments every member until its file is back to the live data it had before the fill (what it had in
 * use then, and an eighth of the quota for what the workload wrote since); resolves with how many
 * defragmentations it took. Once is not always enough: the compaction waits for the member that took
 * it, and the others compact in the background, so a member defragmented before it compacted keeps its
 * file at the quota (a long run's member kept 66 MB of its 64 MiB after a heal, and raised the alarm by
 * itself a minute later, outside any fault). The bound is the live data's, not a fixed one: a long run's
 * live data grows (quotaFor), and a fixed half of the quota stopped a run whose data was 33.9 MB.
 */
async function defragment(cluster: EtcdCluster, quota: number, liveBefore: number): Promise<number> {
  const bound = liveBefore + quota / 8;
  let runs = 0;
  await eachMember(cluster, async (m, one) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      await one.maintenance.defragment();
      runs++;
      const size = Number((await one.maintenance.status()).dbSize);
      if (size < bound) return;
      if (Date.now() > deadline) throw new Error(`etcd-quota: ${m.name}'s file is ${size} bytes 30 s into the heal, after ${runs} defragmentations (the members had ${liveBefore} bytes in use before the fill)`);
      await sleep(200);
    }
  });
  return runs;
}

/** The most any member has in use (dbSizeInUse: its file, less the free pages a defragmentation would return). */
async function liveBytes(cluster: EtcdCluster): Promise<number> {
  let most = 0;
  await eachMember(cluster, async (_, one) => {
    most = Math.max(most, Number((await one.maintenance.status()).dbSizeInUse));
  });
  return most;
}

/** Calls fn for each member in turn, with a client of that member alone (maintenance calls answer for the member asked). */
async function eachMember(cluster: EtcdCluster, fn: (m: Member, one: Etcd3) => Promise<void>): Promise<void> {
  for (const m of cluster.members) {
    const one = new Etcd3({ hosts: [m.clientUrl], faultHandling: { host: () => noop, global: noop } });
    try {
      await fn(m, one);
    } finally {
      one.close();
    }
  }
}

/**
 * As `etcdctl alarm disarm` does, each raised alarm deactivated on its member; again while one is listed,
 * until a write is taken and no alarm is listed half a second later. Disarming once is not enough: a
 * member raises the alarm for each write it refuses while its file is over the quota, and those raised
 * while it was defragmented may land between two deactivations (a 309,000-operation run was left with
 * one alarm raised: raised again before the other was deactivated, so the count never fell to 0).
 * Resolves with how many times an alarm was disarmed.
 */
async function disarm(client: Etcd3): Promise<number> {
  const deadline = Date.now() + 30_000;
  let disarmed = 0;
  let last: unknown;
  for (;;) {
    try {
      const raised = await alarms(client);
      for (const a of raised) {
        await client.maintenance.alarm({ action: "Deactivate", alarm: /^(nospace|1)$/i.test(a.alarm) ? "Nospace" : "Corrupt", memberID: a.memberID });
      }
      if (raised.length > 0) disarmed++;
      else {
        await client.put(`${FILLER_PREFIX}probe`).value("x").exec();
        await client.delete().key(`${FILLER_PREFIX}probe`).exec();
        await sleep(500);
        if ((await alarms(client)).length === 0) return disarmed;
      }
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const left = await alarms(client).catch(() => []);
      throw new Error(`etcd-quota: etcd takes no write 30 s into the heal (alarms listed: ${left.map((a) => `${a.alarm} on ${a.memberID}`).join(", ") || "none"}; last error: ${String(last)})`);
    }
    await sleep(100);
  }
}

/** Fills etcd to its quota, holds the alarm for holdMs, heals; resolves with what was done, once etcd takes writes again. */
export async function fillToQuota(cluster: EtcdCluster, prefix: string, log: HistoryLog, holdMs: number): Promise<string> {
  // No retries and no circuit breaker (etcd3's defaults): in a long run the heal's probe ended on
  // BrokenCircuitError, every member's breaker open, its last calls never reaching etcd. Each call here
  // reaches etcd, and the loops below decide what to do with its answer.
  const client = new Etcd3({ hosts: cluster.endpoints, grpcOptions: HISTORY_GRPC_OPTIONS, faultHandling: { host: () => noop, global: noop } });
  const marker = `${prefix}~quota-mark`;
  const started = Date.now();
  const quota = cluster.quotaBytes ?? QUOTA_BYTES;
  try {
    const liveBefore = await liveBytes(cluster);
    if (liveBefore > (quota * 3) / 4) {
      throw new Error(`etcd-quota: etcd has ${liveBefore} bytes in use of its quota of ${quota} before the fill: the run's own data nearly fills it (give the run a larger quota: quotaFor)`);
    }
    await client.put(marker).value("fill").exec();
    const value = randomBytes(CHUNK);
    let chunks = 0;
    let full = false;
    for (let i = 0; i < quota / CHUNK + 16 && !full; i++) {
      try {
        await client.put(`${FILLER_PREFIX}${i}`).value(value).exec();
        chunks++;
      } catch (err) {
        if (!noSpace(err)) throw err;
        full = true;
      }
    }
    const filledMs = Date.now() - started;
    const raised = (await alarms(client)).filter((a) => /^(nospace|1)$/i.test(a.alarm)).length;
    if (!full || raised === 0) throw new Error(`etcd-quota: ${chunks} chunks of ${CHUNK} bytes written and etcd did not refuse (alarms raised: ${raised})`);
    await sleep(holdMs);
    // The heal: the filler goes, then the marker, whose delete ends the history read before compacting there.
    const healStart = Date.now();
    await client.delete().prefix(FILLER_PREFIX).exec();
    const { header } = await client.delete().key(marker).exec();
    const at = BigInt(header.revision);
    // One at a time: a long run's events between two heals are more than a call takes arguments.
    for (const e of await watchUntil(client, prefix, log.from, at)) log.events.push(e);
    log.from = at + 1n;
    await client.kv.compact({ revision: String(at), physical: true });
    const shrunk = await defragment(cluster, quota, liveBefore);
    const disarms = await disarm(client);
    return `filled etcd to its quota of ${quota >> 20} MiB (${(liveBefore / (1 << 20)).toFixed(1)} MiB in use before) with ${chunks} chunks of ${CHUNK >> 20} MiB in ${filledMs} ms (NOSPACE raised on ${raised} members), held ${holdMs} ms; healed (filler deleted, compacted at revision ${at}, defragmented${shrunk > cluster.members.length ? ` (${shrunk} times: a member had not compacted yet)` : ""}, alarm disarmed${disarms > 1 ? ` ${disarms} times: raised again as it was disarmed` : ""}) in ${Date.now() - healStart} ms`;
  } finally {
    client.close();
  }
}
