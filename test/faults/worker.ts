// A client process of a fault run: it acquires resources at random, writes under its tokens, renews,
// releases or abandons, and writes one history line (history.ts's Op, as JSON) to stdout per answer.
// It acts as a careful user would: a write whose answer is ambiguous is retried with the same
// idempotency key (when it has one), never assumed done; a lost lease ends its writes. It also sends,
// now and then, a write under a token it no longer holds, as a paused or partitioned holder would.
// Started by the runner with its configuration as one JSON argument; "stop" on stdin ends it.
//
//   via "grpc": plain gRPC calls (Acquire, Renew, Release, Put/Delete/Txn), a replica at random per call
//   via "sdk":  the TypeScript SDK (leases kept alive on its KeepAlive stream, servers failed over)
// Holders also act as elected leaders do: an acquisition may publish a value (a campaign), and a holder
// changes it with Proclaim, now and then under a token it no longer holds; and plain-gRPC clients
// follow a resource's leader now and then on an Observe stream, as followers do.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { fromBinary } from "@bufbuild/protobuf";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { FencekeeperClient, FencekeeperError, LeaseLostError, type Lease, type Token } from "../../client/index.js";
import { AcquireMode, FenceMode, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { tokenFromProto, tokenToProto } from "../../client/token.js";
import type { Clients } from "../harness/clients.js";
import { WITH_ANOTHER, type Op, type OpKind, type Outcome, type Via } from "./history.js";
import { Rng } from "./rng.js";

export interface WorkerConfig {
  client: string;
  via: Via;
  servers: string[];
  seed: number;
  resources: string[];
  /** Keys per resource: k0 .. k(n-1). */
  keys: number;
  /** A resource that plain-gRPC workers acquire as a counting semaphore of this many permits, now and then. */
  semaphore?: { resource: string; maxHolders: number };
  /** A bearer JWT sent with every call (the replicas authenticate callers, auth.ts); none for a client named by its certificate. */
  bearer?: string;
  /** The files of the CA that signed the replicas' certificate, and of this client's certificate (mutual TLS). */
  tls?: { ca: string; cert: string; key: string };
  /**
   * Another principal's JWT: now and then this client acquires as it (on one of resources: those where the
   * policy lets this client write, so that the binding alone refuses it), then writes and renews under the
   * token as itself (NOT_HOLDER).
   */
  other?: { principal: string; bearer: string; resources?: string[] };
  /** The share of exclusive acquisitions sent with preempt (the policy grants this client the verb). */
  preempt?: number;
  /**
   * Resources where the run's policy denies this client's writes: a fifth of its acquisitions pick one of
   * them, so that every run has writes the policy refuses (each judged against the policy).
   */
  denied?: string[];
}

const CALL_TIMEOUT_MS = 4_000;
const RETRIES = 3;
/** Errors whose answer is the server's verdict: the operation was not done. The rest are ambiguous. */
const DEFINITE = new Set([
  Code.InvalidArgument, Code.NotFound, Code.AlreadyExists, Code.PermissionDenied, Code.ResourceExhausted,
  Code.FailedPrecondition, Code.OutOfRange, Code.Unimplemented, Code.Unauthenticated,
]);
/**
 * ABORTED is the server's verdict only with its ErrorInfo (RESOURCE_HELD): the gRPC library also says
 * ABORTED, without one, for a connection reset under a call in flight, which may have been done.
 */
/**
 * ETCD_NO_SPACE neither: etcd applies a write it takes as its database crosses the quota and answers it
 * NOSPACE all the same, so a careful user sends it again with its idempotency key, as after UNAVAILABLE.
 */
const definite = (code: Code, reason: string | undefined) =>
  reason !== "ETCD_NO_SPACE" && (DEFINITE.has(code) || (code === Code.Aborted && reason !== undefined));

type Effects = [string, string | null][];
interface Held {
  token: Token;
  /** A shared holding (a semaphore's permit too): it writes nothing in the fenced store. */
  shared?: boolean;
  /** Held on the worker's session: its lease is the session's. */
  onSession?: boolean;
  /** The SDK's lease, when via sdk. */
  lease?: Lease;
}
interface Answer {
  /** open-session: the session's id. */
  session?: bigint;
  rev?: bigint;
  replayed?: boolean;
  token?: Token;
}

const config = JSON.parse(process.argv[2]) as WorkerConfig;
const rng = new Rng(config.seed);
let seq = 0;
let stopping = false;
createInterface({ input: process.stdin }).on("line", (l) => {
  if (l.trim() === "stop") stopping = true;
});

const bearerOf =
  (token?: string): Interceptor =>
  (next) =>
  (req) => {
    if (token) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
const tls = config.tls && { ca: readFileSync(config.tls.ca), cert: readFileSync(config.tls.cert), key: readFileSync(config.tls.key) };
const clientsAs = (token?: string): Clients[] =>
  config.servers.map((url) => {
    const transport = createGrpcTransport({ baseUrl: url, interceptors: [bearerOf(token)], nodeOptions: tls });
    return { lease: createClient(LeaseService, transport), store: createClient(FencedStoreService, transport) };
  });
const grpc = clientsAs(config.bearer);
/** As config.other's principal. */
const otherGrpc = config.other ? clientsAs(config.other.bearer) : [];
const sdk =
  config.via === "sdk"
    ? new FencekeeperClient({ servers: config.servers, holder: config.client, callTimeoutMs: CALL_TIMEOUT_MS, credentials: { ...(config.bearer ? { bearer: config.bearer } : {}), ...(tls ? { tls } : {}) } })
    : undefined;
const some = () => rng.pick(grpc);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs one call and writes its history line; returns the answer, or undefined when it did not succeed. */
async function record(op: Omit<Op, "client" | "via" | "seq" | "t0" | "t1" | "outcome">, call: () => Promise<Answer>): Promise<Answer & { outcome: Outcome; reason?: string }> {
  const entry: Op = { client: config.client, via: config.via, seq: ++seq, t0: Date.now(), t1: 0, outcome: "ok", ...op };
  let result: Answer & { outcome: Outcome; reason?: string };
  try {
    const a = await call();
    result = { ...a, outcome: "ok" };
    if (a.rev !== undefined) entry.rev = String(a.rev);
    if (a.replayed) entry.replayed = true;
    if (a.session !== undefined) entry.session = entry.lease = String(a.session);
    if (a.token) {
      entry.gen = String(a.token.generation);
      entry.lease = String(a.token.leaseId);
    }
  } catch (err) {
    const { outcome, code, reason, message } = classify(err);
    result = { outcome, reason };
    entry.outcome = outcome;
    entry.code = code;
    if (reason) entry.reason = reason;
    if (message) entry.message = message;
  }
  entry.t1 = Date.now();
  process.stdout.write(JSON.stringify(entry) + "\n");
  return result;
}

function classify(err: unknown): { outcome: Outcome; code: string; reason?: string; message?: string } {
  const message = String((err as Error)?.message ?? err).slice(0, 300);
  if (err instanceof LeaseLostError) return { outcome: "unsent", code: "LeaseLost", reason: err.why };
  if (err instanceof FencekeeperError) return { outcome: definite(err.code, err.reason) ? "fail" : "ambiguous", code: Code[err.code], reason: err.reason, message };
  if (err instanceof ConnectError) {
    const reason = err.findDetails(ErrorInfoSchema)[0]?.reason;
    return { outcome: definite(err.code, reason) ? "fail" : "ambiguous", code: Code[err.code], reason, message };
  }
  return { outcome: "ambiguous", code: String((err as Error)?.name ?? "Error"), message };
}

const toProto = (t: Token) => tokenToProto(t);
const fromProto = (t: FencingToken | undefined): Token => {
  if (!t) throw new Error("no token in the answer");
  return tokenFromProto(t);
};
const seconds = (ms: number) => ({ seconds: BigInt(Math.ceil(ms / 1000)), nanos: 0 });

/**
 * How a plain-gRPC worker acquires: mostly exclusive (a fifth of those with a lock-delay of 1 s, in force
 * when the holder walks away), sometimes shared, sometimes a permit of the semaphore resource.
 */
function acquireMode(resource: string): { resource: string; shared?: boolean; maxHolders?: number; lockDelayMs?: number; onSession?: boolean; preempt?: boolean } {
  if (sdk) return { resource };
  if (config.preempt && rng.chance(config.preempt)) return { resource, preempt: true };
  const r = rng.next();
  if (r < 0.1 && config.semaphore) return { resource: config.semaphore.resource, shared: true, maxHolders: config.semaphore.maxHolders };
  if (r < 0.25) return { resource, shared: true };
  if (r < 0.4) return { resource, lockDelayMs: 1_000 };
  if (r < 0.5) return { resource, onSession: true };
  return { resource };
}

/** The session of a plain-gRPC worker (TTL 3 s, kept alive only by the renewals of its acquisitions), opened when first needed. */
let session: bigint | undefined;

async function openSession(): Promise<bigint | undefined> {
  if (session !== undefined) return session;
  const a = await record({ kind: "open-session", resource: "", ttlMs: 3_000 }, async () => {
    const res = await some().lease.openSession({ ttl: seconds(3_000), holder: config.client }, { timeoutMs: CALL_TIMEOUT_MS });
    return { session: res.sessionId };
  });
  session = a.session;
  return a.session;
}

async function closeSession(): Promise<void> {
  const id = session;
  if (id === undefined) return;
  session = undefined;
  await record({ kind: "close-session", resource: "", session: String(id), lease: String(id) }, async () => {
    await some().lease.closeSession({ sessionId: id }, { timeoutMs: CALL_TIMEOUT_MS });
    return {};
  });
}

async function acquire(picked: string): Promise<Held | undefined> {
  const { resource, shared, maxHolders, lockDelayMs, onSession, preempt } = acquireMode(picked);
  // A tenth of the plain exclusive acquisitions take a second resource with it, all or nothing (AcquireAll).
  const second = rng.pick(config.resources.filter((r) => r !== resource));
  if (!shared && !lockDelayMs && !preempt && second !== undefined && rng.chance(0.1)) return acquireAll([resource, second], onSession);
  const sessionId = onSession ? await openSession() : undefined;
  if (onSession && sessionId === undefined) return undefined;
  const wait = !preempt && rng.chance(0.5);
  const waitMs = rng.int(300, 1_500);
  const ttlMs = rng.pick([2_000, 3_000]);
  const holder = `${config.client}.${seq + 1}`;
  // A third of the exclusive acquisitions are campaigns: they publish a value (the holder's label).
  const value = !shared && rng.chance(0.3) ? holder : undefined;
  let lease: Lease | undefined;
  const on = sessionId !== undefined ? { session: String(sessionId) } : { ttlMs };
  const a = await record({ kind: "acquire", resource, wait, holder, ...on, shared, maxHolders, lockDelayMs, ...(preempt ? { preempt } : {}), ...(value ? { value } : {}) }, async () => {
    if (sdk) {
      lease = await sdk.acquire(resource, { ttl: ttlMs, wait: wait ? waitMs : false, holder, ...(value ? { value } : {}) });
      return { token: lease.token };
    }
    const res = await some().lease.acquire(
      {
        resource, ttl: seconds(ttlMs), holder, wait, waitTimeout: wait ? { seconds: BigInt(Math.floor(waitMs / 1000)), nanos: (waitMs % 1000) * 1e6 } : undefined,
        ...(shared ? { mode: AcquireMode.SHARED, maxHolders: maxHolders ?? 0 } : {}),
        ...(lockDelayMs ? { lockDelay: seconds(lockDelayMs) } : {}),
        ...(preempt ? { preempt } : {}),
        ...(sessionId !== undefined ? { sessionId, ttl: undefined } : {}),
        ...(value ? { value: Buffer.from(value) } : {}),
      },
      { timeoutMs: CALL_TIMEOUT_MS + (wait ? waitMs : 0) },
    );
    return { token: fromProto(res.token) };
  });
  // A session gone (expired while this worker did not renew it, or closed): open another next time.
  if (sessionId !== undefined && a.reason === "LEASE_NOT_FOUND") session = undefined;
  return a.token ? { token: a.token, lease, shared, onSession: sessionId !== undefined } : undefined;
}

/**
 * An AcquireAll of resources (exclusive, in one call, granted in one etcd transaction or released before
 * the answer): one history line per resource, with the call's times and outcome. The first resource is
 * the round's holding; the others are released at once.
 */
async function acquireAll(resources: string[], onSession: boolean | undefined): Promise<Held | undefined> {
  const sessionId = onSession ? await openSession() : undefined;
  if (onSession && sessionId === undefined) return undefined;
  const wait = rng.chance(0.5);
  const waitMs = rng.int(300, 1_500);
  const ttlMs = rng.pick([2_000, 3_000]);
  const holder = `${config.client}.${seq + 1}`;
  const on = sessionId !== undefined ? { session: String(sessionId) } : { ttlMs };
  const t0 = Date.now();
  let tokens: Token[] | undefined;
  let leases: Lease[] | undefined;
  let failure: ReturnType<typeof classify> | undefined;
  let failed: string | undefined;
  try {
    if (sdk) {
      leases = await sdk.acquireAll(resources, { ttl: ttlMs, wait: wait ? waitMs : false, holder });
      tokens = leases.map((l) => l.token);
    } else {
      const res = await some().lease.acquireAll(
        {
          resources, ttl: sessionId !== undefined ? undefined : seconds(ttlMs), holder, wait, waitTimeout: wait ? { seconds: BigInt(Math.floor(waitMs / 1000)), nanos: (waitMs % 1000) * 1e6 } : undefined,
          ...(sessionId !== undefined ? { sessionId } : {}),
        },
        { timeoutMs: CALL_TIMEOUT_MS + (wait ? waitMs : 0) },
      );
      tokens = res.acquisitions.map((a) => fromProto(a.token));
    }
  } catch (err) {
    failure = classify(err);
    // The answer is the failure of the resource that failed (its ErrorInfo names it); the others of the
    // call were given back for it.
    failed = err instanceof FencekeeperError ? err.metadata.resource : err instanceof ConnectError ? err.findDetails(ErrorInfoSchema)[0]?.metadata.resource : undefined;
  }
  const t1 = Date.now();
  const all = resources.join(",");
  resources.forEach((resource, i) => {
    const entry: Op = { client: config.client, via: config.via, seq: ++seq, t0, t1, outcome: "ok", kind: "acquire", resource, wait, holder, all, ...on };
    if (failure && failed !== undefined && failed !== resource && failure.outcome === "fail") Object.assign(entry, { outcome: "fail", code: failure.code, reason: WITH_ANOTHER });
    else if (failure) Object.assign(entry, { outcome: failure.outcome, code: failure.code, ...(failure.reason ? { reason: failure.reason } : {}), ...(failure.message ? { message: failure.message } : {}) });
    else Object.assign(entry, { gen: String(tokens![i].generation), lease: String(tokens![i].leaseId) });
    process.stdout.write(JSON.stringify(entry) + "\n");
  });
  if (sessionId !== undefined && failure?.reason === "LEASE_NOT_FOUND") session = undefined;
  if (!tokens) return undefined;
  const helds: Held[] = tokens.map((token, i) => ({ token, lease: leases?.[i], onSession: sessionId !== undefined }));
  for (const h of helds.slice(1)) await release(h);
  return helds[0];
}

/** A write and, if its answer is ambiguous and it has an idempotency key, its retries. Returns its outcome. */
async function write(held: Held, explicit: boolean, one?: { kind: "put" | "delete"; key: string; coalesced?: boolean }): Promise<Answer & { outcome: Outcome; reason?: string }> {
  const op = { ...planWrite(held, one), ...(one?.coalesced ? { coalesced: true } : {}) };
  return retry(held, explicit, op, await record({ ...op, attempt: 0 }, () => send(held, explicit, op.kind, op.effects, op.mode, op.idem)));
}

type PlannedWrite = Omit<Op, "client" | "via" | "seq" | "t0" | "t1" | "outcome"> & { kind: OpKind; effects: Effects; mode: "order" | "live"; write: string };

/** A write's random choices: its kind, keys and values (named after the write), mode, idempotency key. */
function planWrite(held: Held, one?: { kind: "put" | "delete"; key: string }, id = `${config.client}.${seq + 1}`): PlannedWrite {
  const { token } = held;
  const kind = one?.kind ?? rng.pick<OpKind>(["put", "put", "delete", "txn"]);
  const keys = one ? [one.key] : rng.shuffle(Array.from({ length: config.keys }, (_, i) => `k${i}`)).slice(0, kind === "txn" ? rng.int(2, 3) : 1);
  const effects: Effects = keys.map((k, i) => [k, kind === "delete" || (kind === "txn" && rng.chance(0.3)) ? null : `${id}/${i}`]);
  const mode = rng.chance(0.5) ? "live" : "order";
  const idem = rng.chance(0.5) ? `w-${id}` : undefined;
  return { kind, resource: token.resource, gen: String(token.generation), lease: String(token.leaseId), mode, idem, write: id, effects };
}

/** Sends a write again, alone and with its idempotency key, while its answer is ambiguous (up to RETRIES times). */
async function retry(held: Held, explicit: boolean, op: PlannedWrite, first: Answer & { outcome: Outcome; reason?: string }): Promise<Answer & { outcome: Outcome; reason?: string }> {
  let a = first;
  for (let attempt = 1; a.outcome === "ambiguous" && op.idem && attempt <= RETRIES && !stopping; attempt++) {
    await sleep(rng.int(200, 600));
    a = await record({ ...op, attempt }, () => send(held, explicit, op.kind, op.effects, op.mode, op.idem));
  }
  return a;
}

/**
 * 2 or 3 writes (puts and deletes of distinct keys) at once, each its own history line and judged on its
 * own: through the SDK, sent concurrently (its writer coalesces them into FencedStoreService.Batch calls);
 * over plain gRPC, one explicit Batch call. Ambiguous ones are retried alone with their idempotency keys.
 */
async function writeMany(held: Held): Promise<(Answer & { outcome: Outcome; reason?: string })[]> {
  const keys = rng.shuffle(Array.from({ length: config.keys }, (_, i) => `k${i}`)).slice(0, rng.int(2, 3));
  const spec = keys.map((key) => ({ kind: rng.chance(0.7) ? ("put" as const) : ("delete" as const), key }));
  if (sdk) return Promise.all(spec.map((one) => write(held, false, { ...one, coalesced: true })));
  const first = `${config.client}.${seq + 1}`;
  const ops = spec.map((one, i) => planWrite(held, one, `${first}-${i}`));
  const t0 = Date.now();
  let answers: (Answer | Error)[];
  try {
    const res = await some().store.batch(
      {
        writes: ops.map((op) => {
          const [key, v] = op.effects[0];
          const mutation = { token: toProto(held.token), mode: op.mode === "live" ? FenceMode.LIVE : FenceMode.ORDER, idempotencyKey: op.idem ?? "" };
          return { write: v === null ? { case: "delete" as const, value: { resource: op.resource, key, mutation } } : { case: "put" as const, value: { resource: op.resource, key, value: Buffer.from(v), mutation } } };
        }),
      },
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    answers = ops.map((_, i) => {
      const r = res.results[i]?.result;
      if (r?.case === "commit") return { rev: r.value.revision, replayed: r.value.replayed };
      return statusError(r?.case === "error" ? r.value : undefined) ?? new Error("no result for this write");
    });
  } catch (err) {
    answers = ops.map(() => err as Error);
  }
  const t1 = Date.now();
  const firsts = ops.map((op, i) => {
    const entry: Op = { client: config.client, via: config.via, seq: ++seq, t0, t1, outcome: "ok", ...op, attempt: 0, batch: true };
    const a = answers[i];
    let result: Answer & { outcome: Outcome; reason?: string };
    if (a instanceof Error) {
      const c = classify(a);
      Object.assign(entry, { outcome: c.outcome, code: c.code, ...(c.reason ? { reason: c.reason } : {}), ...(c.message ? { message: c.message } : {}) });
      result = { outcome: c.outcome, reason: c.reason };
    } else {
      if (a.rev !== undefined) entry.rev = String(a.rev);
      if (a.replayed) entry.replayed = true;
      result = { ...a, outcome: "ok" };
    }
    process.stdout.write(JSON.stringify(entry) + "\n");
    return result;
  });
  return Promise.all(ops.map((op, i) => retry(held, false, op, firsts[i])));
}

/** A google.rpc.Status from a KeepAlive or Batch answer, as the error the call alone would have raised; undefined for none. */
function statusError(e: { code: number; message: string; details: { typeUrl: string; value: Uint8Array }[] } | undefined): ConnectError | undefined {
  if (!e) return undefined;
  const info = e.details.find((d) => d.typeUrl.endsWith("google.rpc.ErrorInfo"));
  const reason = info ? fromBinary(ErrorInfoSchema, info.value).reason : undefined;
  return new ConnectError(e.message, e.code as Code, undefined, reason ? [{ desc: ErrorInfoSchema, value: { reason, domain: "fencekeeper" } }] : undefined);
}

async function send(held: Held, explicit: boolean, kind: OpKind, effects: Effects, mode: "order" | "live", idem?: string): Promise<Answer> {
  const options = { mode, idempotencyKey: idem };
  const ops = effects.map(([k, v]) => (v === null ? { delete: k } : { put: k, value: v }));
  if (sdk) {
    // Through the lease (which refuses on its own once the lease is lost), or with the token given
    // explicitly, as a holder that does not know it lost would.
    const on = held.lease && !explicit ? held.lease : undefined;
    const [k, v] = effects[0];
    const c =
      kind === "put" ? await (on ? on.put(k, v!, options) : sdk.store.put(held.token, k, v!, options))
      : kind === "delete" ? await (on ? on.delete(k, options) : sdk.store.delete(held.token, k, options))
      : await (on ? on.txn(ops, options) : sdk.store.txn(held.token, ops, options));
    return { rev: c.revision, replayed: c.replayed };
  }
  const mutation = { token: toProto(held.token), mode: mode === "live" ? FenceMode.LIVE : FenceMode.ORDER, idempotencyKey: idem ?? "" };
  const resource = held.token.resource;
  const o = { timeoutMs: CALL_TIMEOUT_MS };
  const store = some().store;
  const [k, v] = effects[0];
  const res =
    kind === "put" ? await store.put({ resource, key: k, value: Buffer.from(v!), mutation }, o)
    : kind === "delete" ? await store.delete({ resource, key: k, mutation }, o)
    : await store.txn({ resource, mutation, ops: effects.map(([key, value]) => ({ op: value === null ? { case: "delete" as const, value: { key } } : { case: "put" as const, value: { key, value: Buffer.from(value) } } })) }, o);
  return { rev: res.commit?.revision, replayed: res.commit?.replayed };
}

/**
 * A renewal: Renew, or one message on a KeepAlive stream, for this lease alone or batched (lease_ids) with
 * the leases of the tokens this client held before (most of them gone: their answers are NOT_FOUND).
 * Each lease's answer is its own history line.
 */
async function renew(held: Held): Promise<Outcome> {
  const { token } = held;
  const how = rng.pick(["renew", "renew", "keepalive", "keepalive-batch"] as const);
  const line = (t: Token) => ({ kind: "renew" as const, resource: t.resource, gen: String(t.generation), lease: String(t.leaseId), renewVia: how });
  if (how === "renew") {
    const a = await record(line(token), async () => {
      await some().lease.renew({ leaseId: token.leaseId }, { timeoutMs: CALL_TIMEOUT_MS });
      return {};
    });
    return a.outcome;
  }
  const others = how === "keepalive-batch" ? old.filter((o) => o.token.leaseId !== token.leaseId).map((o) => o.token) : [];
  const t0 = Date.now();
  let answers: (Error | undefined)[];
  try {
    answers = await keepAliveOnce(token.leaseId, others.map((t) => t.leaseId));
  } catch (err) {
    answers = [token, ...others].map(() => err as Error);
  }
  const t1 = Date.now();
  let first: Outcome = "ok";
  [token, ...others].forEach((t, i) => {
    const entry: Op = { client: config.client, via: config.via, seq: ++seq, t0, t1, outcome: "ok", ...line(t) };
    const err = answers[i];
    if (err) {
      const c = classify(err);
      Object.assign(entry, { outcome: c.outcome, code: c.code, ...(c.reason ? { reason: c.reason } : {}), ...(c.message ? { message: c.message } : {}) });
    }
    if (i === 0) first = entry.outcome;
    process.stdout.write(JSON.stringify(entry) + "\n");
  });
  return first;
}

/** Sends one KeepAlive message (lease_id, and lease_ids when batched) and reads its answer: per lease, undefined (renewed) or the error. */
async function keepAliveOnce(leaseId: bigint, more: bigint[]): Promise<(Error | undefined)[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), CALL_TIMEOUT_MS);
  let answered: () => void = () => {};
  const done = new Promise<void>((r) => (answered = r));
  async function* requests() {
    yield more.length > 0 ? { leaseId, leaseIds: more } : { leaseId };
    await done; // the stream stays open until the answer has come
  }
  try {
    for await (const res of some().lease.keepAlive(requests(), { signal: ac.signal })) {
      answered();
      const status = statusError;
      if (more.length === 0) return [status(res.error)];
      return [leaseId, ...more].map((_, i) => status(res.renewals[i]?.error) ?? (res.renewals[i] ? undefined : new Error("no answer for this lease")));
    }
    throw new ConnectError("the KeepAlive stream ended without an answer", Code.Unavailable);
  } finally {
    answered();
    clearTimeout(timer);
    ac.abort();
  }
}

/**
 * A Proclaim: the holder publishes a new value (unique in the run), as an elected leader announcing a new
 * address would; through the SDK's lease, or explicitly with the token (as a holder that does not know
 * it lost would). Never retried: a Proclaim has no idempotency key, and one answered ambiguously is left
 * to the checker.
 */
async function proclaim(held: Held, explicit: boolean): Promise<{ outcome: Outcome; reason?: string }> {
  const { token } = held;
  const value = `${config.client}.${seq + 1}/v`;
  const a = await record({ kind: "proclaim", resource: token.resource, gen: String(token.generation), lease: String(token.leaseId), value }, async () => {
    if (held.lease && !explicit) return { rev: await held.lease.proclaim(value) };
    const res = await some().lease.proclaim({ token: toProto(token), value: Buffer.from(value) }, { timeoutMs: CALL_TIMEOUT_MS });
    return { rev: res.revision };
  });
  return a;
}

async function release(held: Held): Promise<void> {
  const { token } = held;
  await record({ kind: "release", resource: token.resource, gen: String(token.generation), lease: String(token.leaseId) }, async () => {
    if (held.lease) {
      // The SDK's release() never fails (the lease ends at its TTL anyway): it says nothing of the
      // server's answer, so the history may not count it as a confirmed release.
      await held.lease.release();
      throw new NoVerdict("the SDK's release() does not report the server's answer");
    }
    await some().lease.release({ token: toProto(token) }, { timeoutMs: CALL_TIMEOUT_MS });
    return {};
  });
}

class NoVerdict extends Error {
  override name = "NoVerdict";
}

/** Tokens this client held before: writing under one is what a holder that missed its loss does. */
const old: Held[] = [];
const remember = (h: Held) => {
  old.push({ token: h.token });
  if (old.length > 4) old.shift();
};

/**
 * Acquires as another principal (config.other), then writes and renews under that token as this client:
 * the holder binding refuses both (PERMISSION_DENIED, NOT_HOLDER), and they must leave nothing written.
 * The other principal then releases its lease.
 */
async function impostorRound(other: { principal: string; resources?: string[] }): Promise<void> {
  const resource = rng.pick(other.resources ?? config.resources);
  const ttlMs = 2_000;
  const holder = `${config.client}.${seq + 1}`;
  const as = rng.pick(otherGrpc);
  // Waiting up to 1 s for a busy resource, so that most rounds get a token to misuse.
  const a = await record({ kind: "acquire", resource, wait: true, holder, ttlMs, principal: other.principal }, async () => {
    const res = await as.lease.acquire({ resource, ttl: seconds(ttlMs), holder, wait: true, waitTimeout: { seconds: 1n, nanos: 0 } }, { timeoutMs: CALL_TIMEOUT_MS + 1_000 });
    return { token: fromProto(res.token) };
  });
  if (!a.token) return;
  const token = a.token;
  await write({ token }, true);
  await proclaim({ token }, true);
  await renew({ token });
  await record({ kind: "release", resource, gen: String(token.generation), lease: String(token.leaseId), principal: other.principal }, async () => {
    await as.lease.release({ token: toProto(token) }, { timeoutMs: CALL_TIMEOUT_MS });
    return {};
  });
}

/**
 * A follower: an Observe stream on a resource for 1 to 3 s, one history line per message (the state it
 * names, at the revision it names). Its end (the time is up, or the stream failed) writes nothing more.
 */
async function follow(resource: string): Promise<void> {
  const stream = `${config.client}.${seq + 1}`;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), rng.int(1_000, 3_000));
  const t0 = Date.now();
  try {
    for await (const m of some().lease.observe({ resource }, { signal: ac.signal })) {
      const entry: Op = { client: config.client, via: config.via, seq: ++seq, kind: "observe", t0, t1: Date.now(), resource, outcome: "ok", stream, rev: String(m.revision), held: m.held };
      if (m.token) Object.assign(entry, { gen: String(m.token.generation), lease: String(m.token.leaseId), value: Buffer.from(m.value).toString("utf8") });
      process.stdout.write(JSON.stringify(entry) + "\n");
    }
  } catch {
    // the time is up, or the stream failed (a fault): what it said so far is judged
  } finally {
    clearTimeout(timer);
  }
}

async function round(): Promise<void> {
  if (config.other && rng.chance(0.15)) return impostorRound(config.other);
  if (!sdk && rng.chance(0.05)) return follow(rng.pick(config.resources));
  if (old.length > 0 && rng.chance(0.15)) {
    if (rng.chance(0.25)) await proclaim(rng.pick(old), true);
    else await write(rng.pick(old), true);
  }
  const held = await acquire(config.denied && rng.chance(0.2) ? rng.pick(config.denied) : rng.pick(config.resources));
  if (!held) {
    // As a careful user would, back off before trying again: a server without etcd answers at once.
    await sleep(rng.int(20, 150));
    return;
  }
  const actions = rng.int(1, 6);
  for (let i = 0; i < actions && !stopping; i++) {
    const r = rng.next();
    if (r < 0.75 && !held.shared) {
      // A fifth of the writes go several at once (Batch: coalesced by the SDK, explicit over plain gRPC).
      const as = rng.chance(0.2) ? await writeMany(held) : [await write(held, false)];
      if (as.some((a) => a.reason === "STALE_TOKEN" || a.reason === "LEASE_NOT_HELD" || a.outcome === "unsent")) break;
    } else if (r < 0.9 && !sdk) {
      if ((await renew(held)) === "fail") break;
    } else if (!held.shared && r < (sdk ? 0.8 : 0.95)) {
      const a = await proclaim(held, false);
      if (a.reason === "STALE_TOKEN" || a.reason === "LEASE_NOT_HELD" || a.outcome === "unsent") break;
    } else {
      await sleep(rng.int(50, 400));
    }
  }
  if (!held.shared) remember(held);
  // The SDK keeps its leases alive until released; a gRPC holder sometimes walks away instead, and its
  // lease expires after its TTL, as a crashed holder's would.
  if (sdk || rng.chance(0.85)) await release(held);
  // A session ends now and then with everything on it.
  if (held.onSession && rng.chance(0.5)) await closeSession();
}

while (!stopping) await round();
await Promise.race([sdk?.close(), sleep(5_000)]);
process.exit(0);
