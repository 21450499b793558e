// Helpers for the tests of the batching write path (test/integration/batching*.test.ts): a server whose
// key prefix the test knows (to read etcd behind it), an etcd3 client of the test's own, the history of
// a resource's keys as etcd recorded it, the server's etcd request counts, and call outcomes.
import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { Etcd3 } from "etcd3";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { clientsFor, type Clients } from "./clients.js";
import { startEtcd, type TestEtcd } from "./etcd.js";
import { startServer, type TestServer } from "./server.js";
import { scrape } from "../operations/support/metrics.js";
import { eventually, uniqueResource } from "./suite.js";

export interface Stack extends Clients {
  etcd: TestEtcd;
  server: TestServer;
  /** The server's key prefix. */
  prefix: string;
  /** A client of the test's own, straight to etcd. */
  kv: Etcd3;
}

/** A server with a known prefix on an etcd (a new one unless given), and a direct etcd client. */
export async function startStack(o: { etcd?: TestEtcd; args?: string[] } = {}): Promise<Stack> {
  const etcd = o.etcd ?? (await startEtcd());
  const prefix = `/fk-batch-${randomBytes(4).toString("hex")}/`;
  const server = await startServer({ etcd: etcd.endpoint, prefix, args: o.args });
  const kv = new Etcd3({ hosts: etcd.endpoint });
  return { etcd, server, prefix, kv, ...clientsFor(server.url) };
}

/** The etcd key of a store key, and the root of a resource's keys, as server/etcd/keys.ts lays them out. */
export const layout = (prefix: string) => ({
  root: (resource: string) => `${prefix}r/${encodeURIComponent(resource)}/`,
  data: (resource: string, key: string) => `${prefix}r/${encodeURIComponent(resource)}/d/${key}`,
  fence: (resource: string) => `${prefix}r/${encodeURIComponent(resource)}/fence`,
  owner: (resource: string) => `${prefix}r/${encodeURIComponent(resource)}/owner`,
  records: () => `${prefix}i/`,
});

export interface HistoryEvent {
  type: "put" | "delete";
  key: string;
  value: string;
  modRevision: bigint;
  lease: bigint;
}

/**
 * Every change etcd recorded under keyPrefix from revision `from` on, in revision order. It writes a
 * sentinel key under the prefix and reads until its event, so that nothing before it is missed.
 */
export async function historyOf(kv: Etcd3, keyPrefix: string, from: bigint): Promise<HistoryEvent[]> {
  const sentinel = `${keyPrefix}~history-end-${randomBytes(4).toString("hex")}`;
  const events: HistoryEvent[] = [];
  const watcher = await kv.watch().prefix(keyPrefix).startRevision(String(from)).create();
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`history of ${keyPrefix}: no sentinel event within 20 s`)), 20_000);
      watcher.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      watcher.on("data", (res) => {
        for (const e of res.events) {
          const key = e.kv.key.toString();
          if (key === sentinel) {
            clearTimeout(timer);
            resolve();
            return;
          }
          events.push({
            type: e.type === "Delete" ? "delete" : "put",
            key,
            value: e.kv.value.toString(),
            modRevision: BigInt(e.kv.mod_revision),
            lease: BigInt(e.kv.lease || "0"),
          });
        }
      });
      void kv.put(sentinel).value("x").exec().catch(reject);
    });
  } finally {
    await watcher.cancel();
    await kv.delete().key(sentinel).exec();
  }
  return events;
}

/** The current revision of etcd. */
export async function etcdRevision(kv: Etcd3): Promise<bigint> {
  const r = await kv.kv.range({ key: Buffer.from("/"), count_only: true });
  return BigInt(r.header.revision);
}

/** Operations the committer names its requests by, for mutations and lease changes. */
const WRITE_OPERATIONS = ["put", "delete", "txn", "batch", "acquire", "release", "open session"];

export interface WriteCounts {
  /** etcd requests the server sent for writes (each may carry several transactions). */
  requests: number;
  /** Of those, requests labelled "batch": several transactions of different kinds. */
  batch: number;
  /** etcd write requests that failed. */
  errors: number;
  /** Failed etcd write requests by operation. */
  errorsBy: Record<string, number>;
}

/** What the server's /metrics says of its etcd write requests so far. */
export async function writeCounts(server: TestServer): Promise<WriteCounts> {
  const s = await scrape(server);
  const counts: WriteCounts = { requests: 0, batch: 0, errors: 0, errorsBy: {} };
  for (const sample of s.samples) {
    const op = sample.labels.operation;
    if (!WRITE_OPERATIONS.includes(op)) continue;
    if (sample.name === "fencekeeper_etcd_request_duration_seconds_count") {
      counts.requests += sample.value;
      if (op === "batch") counts.batch += sample.value;
    }
    if (sample.name === "fencekeeper_etcd_request_errors_total") {
      counts.errors += sample.value;
      counts.errorsBy[op] = (counts.errorsBy[op] ?? 0) + sample.value;
    }
  }
  return counts;
}

export function delta(after: WriteCounts, before: WriteCounts): WriteCounts {
  const errorsBy: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.errorsBy)) errorsBy[k] = v - (before.errorsBy[k] ?? 0);
  return { requests: after.requests - before.requests, batch: after.batch - before.batch, errors: after.errors - before.errors, errorsBy };
}

/** A failed call as a test looks at it. */
export interface Failure {
  code: Code;
  codeName: string;
  reason: string;
  metadata: Record<string, string>;
  message: string;
}

export function failureOf(e: unknown): Failure {
  const err = ConnectError.from(e);
  const info = err.findDetails(ErrorInfoSchema)[0];
  return { code: err.code, codeName: Code[err.code], reason: info?.reason ?? "", metadata: { ...(info?.metadata ?? {}) }, message: err.rawMessage };
}

/** Runs n workers on one function until each returns false; resolves when all have stopped. */
export async function workers(n: number, work: (worker: number, round: number) => Promise<boolean>): Promise<void> {
  await Promise.all(
    Array.from({ length: n }, async (_, w) => {
      for (let round = 0; await work(w, round); round++);
    }),
  );
}

export const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
export const bytes = (s: string) => Buffer.from(s);
export const text = (b: Uint8Array) => Buffer.from(b).toString();

// Batches cut off mid-flight (etcd stopped, the server killed): writers with keys of their own, and what
// etcd holds of each call afterwards.

export interface CutCall {
  id: string;
  resource: string;
  keys: string[];
  value: string;
  revision?: bigint;
  failure?: Failure;
}

/**
 * Runs 24 writers (Txns of 3 keys and Puts, each of keys of its own, on 4 resources) until `cut` has been
 * called, after enough acknowledged writes, and every writer has seen a failure after it.
 */
export async function writeThrough(st: Stack, cut: () => Promise<void>): Promise<{ calls: CutCall[]; requestsBeforeCut: number; callsBeforeCut: number }> {
  const resources = Array.from({ length: 4 }, (_, i) => uniqueResource(`cut${i}`));
  const tokens: FencingToken[] = await Promise.all(resources.map(async (resource) => (await st.lease.acquire({ resource, ttl: ttl(60), holder: "writer" })).token!));
  const before = await writeCounts(st.server);
  const calls: CutCall[] = [];
  let cutting = false;
  let cutAt = 0;
  const writing = workers(24, async (w, round) => {
    const r = w % resources.length;
    const id = `w${w}r${round}`;
    const keys = round % 3 === 0 ? [`${id}-0`, `${id}-1`, `${id}-2`] : [id];
    const call: CutCall = { id, resource: resources[r], keys, value: `value-of-${id}` };
    const mutation = { token: tokens[r] };
    try {
      const res =
        keys.length === 1
          ? await st.store.put({ resource: call.resource, key: keys[0], value: bytes(call.value), mutation }, { timeoutMs: 15_000 })
          : await st.store.txn(
              { resource: call.resource, mutation, ops: keys.map((key) => ({ op: { case: "put" as const, value: { key, value: bytes(call.value) } } })) },
              { timeoutMs: 15_000 },
            );
      call.revision = res.commit!.revision;
    } catch (e) {
      call.failure = failureOf(e);
    }
    calls.push(call);
    // Each writer goes on until it has failed after the cut (or 10 s have passed since).
    return !(cutting && (call.failure !== undefined || Date.now() - cutAt > 10_000));
  });
  await eventually(() => calls.filter((c) => c.revision !== undefined).length >= 150, "150 acknowledged writes", 30_000);
  const requestsBeforeCut = delta(await writeCounts(st.server), before).requests;
  const callsBeforeCut = calls.length;
  cutting = true;
  cutAt = Date.now();
  await cut();
  await writing;
  return { calls, requestsBeforeCut, callsBeforeCut };
}

/** Reads every call's keys straight from etcd: acknowledged ones are there, failed ones whole or absent. */
export async function checkAllOrNothing(st: Stack, calls: CutCall[]): Promise<{ ambiguous: number }> {
  const L = layout(st.prefix);
  let ambiguous = 0;
  const problems: string[] = [];
  for (const c of calls) {
    const found = await Promise.all(c.keys.map(async (k) => (await st.kv.kv.range({ key: Buffer.from(L.data(c.resource, k)) })).kvs[0]));
    const present = found.filter((kv) => kv !== undefined);
    const show = `${c.id} (${c.keys.length} keys, ${c.failure ? `failed ${c.failure.codeName} ${c.failure.reason}` : `acknowledged at ${c.revision}`})`;
    if (c.failure === undefined) {
      if (present.length !== c.keys.length) problems.push(`${show}: ${present.length} of its keys in etcd`);
      for (const kv of present) {
        if (String(kv.mod_revision) !== String(c.revision) || kv.value.toString() !== c.value) {
          problems.push(`${show}: ${kv.key} is ${kv.value} at ${kv.mod_revision}`);
        }
      }
      continue;
    }
    if (present.length === 0) continue;
    ambiguous++;
    if (present.length !== c.keys.length) problems.push(`${show}: half applied, ${present.length} of ${c.keys.length} keys in etcd`);
    if (new Set(present.map((kv) => kv.mod_revision)).size !== 1) problems.push(`${show}: its keys were written at different revisions`);
    for (const kv of present) if (kv.value.toString() !== c.value) problems.push(`${show}: ${kv.key} is ${kv.value}`);
  }
  expect(problems, "calls not all or nothing in etcd").to.deep.equal([]);
  return { ambiguous };
}
