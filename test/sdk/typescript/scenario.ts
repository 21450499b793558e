// The conformance scenario of test/conformance/SCENARIO.md through the TypeScript SDK, as the Go probe's
// (sdk/go/cmd/fk-sdk-probe/scenario.go) runs it through the Go library: a client each for A, B and the
// observer. Where the scenario drives the raw stubs (the KeepAlive stream, a Renew of an unknown lease),
// it checks what the SDK does instead. Each step prints "ok <step>"; the first that fails throws.
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import {
  CanceledError,
  FencekeeperClient,
  InvalidArgumentError,
  LeaseLostError,
  LeaseNotFoundError,
  ResourceHeldError,
  StaleTokenError,
  TimeoutError,
  verifyToken,
  type Credentials,
  type Ownership,
  type Token,
} from "../../../client/index.js";
import { tokenToProto } from "../../../client/token.js";
import { defaultDriftMs } from "../../../client/deadline.js";
import { LeaseService } from "../../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../../gen/ts/fencekeeper/v1/store_pb.js";

const TTL = 2000;
// B's lease carries the writes from the handover on: its TTL is not what those steps test, and a loaded
// machine that stalls a process for a couple of seconds must not take it away from under them.
const HELD_TTL = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const step = (line: string) => process.stdout.write(`ok ${line}\n`);

function check(ok: unknown, what: string): asserts ok {
  if (!ok) throw new Error(what);
}

async function expectError<T extends Error>(Class: abstract new (...a: never[]) => T, call: () => Promise<unknown>, what: string): Promise<T> {
  try {
    await call();
  } catch (err) {
    if (err instanceof Class) return err;
    throw new Error(`${what}: expected ${Class.name}, got ${(err as Error)?.constructor?.name}: ${String(err)}`);
  }
  throw new Error(`${what}: expected ${Class.name}, and it succeeded`);
}

/** Counts the write calls (Put, Delete, Batch) a client sends, whatever carries them. */
function writeCalls(): { sent: number; interceptor: Interceptor } {
  const counter = {
    sent: 0,
    interceptor: ((next) => (req) => {
      if (req.service.typeName === FencedStoreService.typeName && ["Put", "Delete", "Batch"].includes(req.method.name)) counter.sent++;
      return next(req);
    }) as Interceptor,
  };
  return counter;
}

export async function runScenario(servers: string[], credentials: Credentials, resource: string, sessions = false): Promise<void> {
  const client = (holder: string, interceptors: Interceptor[] = []) => new FencekeeperClient({ servers, credentials, holder, sessions, interceptors });
  const callsB = writeCalls();
  const a = client("ts-sdk-a");
  const b = client("ts-sdk-b", [callsB.interceptor]);
  const observer = client("ts-sdk-observer");
  const stopObserving = new AbortController();
  try {
    // 1. Observe.
    const changes = observer.observe(resource, { signal: stopObserving.signal });
    const first = await changes.next();
    check(!first.done && !first.value.held, `observe: expected ${resource} not held at first, got ${JSON.stringify(first.value, (_, v) => (typeof v === "bigint" ? String(v) : v))}`);
    const observed: Ownership[] = [];
    const observing = (async () => {
      for await (const x of changes) observed.push(x);
    })().catch(() => {});
    step(`observe: ${resource} not held`);

    // 2. Acquire.
    const leaseA = await a.acquire(resource, { ttl: TTL });
    const tokenA = leaseA.token;
    check(tokenA.resource === resource && tokenA.generation > 0n && leaseA.ttlMs === TTL && leaseA.held, `acquire: expected a held lease with ttl 2 s, got ${tokenA.generation} ttl ${leaseA.ttlMs}`);
    step(`acquire: generation ${tokenA.generation}, lease ${tokenA.leaseId}${sessions ? " (a session)" : ""}`);
    const keys = await a.tokenKeys();
    const altered: Token = { ...tokenA, generation: tokenA.generation + 1n };
    const verified = verifyToken(tokenA, keys);
    const alteredVerified = verifyToken(altered, keys);
    check(verified.ok && !alteredVerified.ok && alteredVerified.reason === "bad signature", `acquire: expected the token to verify and an altered one not to, got ${JSON.stringify([verified, alteredVerified])}`);
    step(`acquire: the token verifies offline (key ${tokenA.keyId})`);

    // 3. Put.
    const valueA = "hello from ts-sdk-a";
    const put = await leaseA.put("greeting", valueA, { mode: "order", idempotencyKey: `${resource}-put-a` });
    check(put.fence === tokenA.generation, `put: expected fence ${tokenA.generation}, got ${put.fence}`);
    step(`put: fence ${put.fence}`);

    // 3b. Batch: the SDK coalesces the writes of one turn into one Batch call; each is answered as it would be alone.
    const writes = await Promise.allSettled([
      a.store.put(tokenA, "batch-1", "one", { idempotencyKey: `${resource}-batch-1` }),
      a.store.put(tokenA, "", "an empty key is refused"),
      a.store.delete(tokenA, "batch-never-written"),
    ]);
    const [one, empty, deleted] = writes;
    check(
      one.status === "fulfilled" && one.value.fence === tokenA.generation && empty.status === "rejected" && empty.reason instanceof InvalidArgumentError && deleted.status === "fulfilled" && deleted.value.fence === tokenA.generation,
      `batch: expected a commit, InvalidArgumentError, a commit; got ${writes.map((w) => (w.status === "fulfilled" ? `commit ${w.value.fence}` : String(w.reason))).join(", ")}`,
    );
    const again = await a.store.put(tokenA, "batch-1", "one", { idempotencyKey: `${resource}-batch-1` });
    check(again.replayed && again.revision === one.value.revision, `batch: expected the retry replayed at revision ${one.value.revision}, got ${JSON.stringify({ replayed: again.replayed, revision: String(again.revision) })}`);
    step(`batch: two commits at fence ${one.value.fence} and an InvalidArgumentError of its own; the retry replayed`);

    // 4. Get, and list.
    const got = await leaseA.get("greeting");
    check(got.found && new TextDecoder().decode(got.value) === valueA && got.fence === tokenA.generation, `get: expected ${valueA} at fence ${tokenA.generation}`);
    step(`get: "${valueA}"`);
    const keysListed: string[] = [];
    for await (const e of a.store.list(resource, { pageSize: 1 })) keysListed.push(e.key);
    check(keysListed.join(",") === "batch-1,greeting", `list: expected batch-1, greeting, got ${keysListed.join(", ")}`);
    step("list: 2 entries, in key order");

    // 5. KeepAlive: the SDK's own stream keeps the lease for three and a half TTLs.
    const firstConfirmed = leaseA.lastConfirmedAt.getTime();
    await sleep(7000);
    leaseA.check();
    check(leaseA.lastConfirmedAt.getTime() > firstConfirmed + 5000, `keepalive: the last renewal was confirmed at ${leaseA.lastConfirmedAt.toISOString()}, expected renewals until the end of the 7 s`);
    const described = await a.describe(resource);
    check(described.held && described.token?.generation === tokenA.generation, `keepalive: expected ${resource} still held by generation ${tokenA.generation}`);
    step(`keepalive: still held after 7s (TTL ${TTL} ms), valid until ${leaseA.validUntil.toISOString()}`);

    // 6. Release: idempotent, and the loss signal says why.
    await leaseA.release();
    await leaseA.release();
    const why = (leaseA.signal.reason as LeaseLostError | undefined)?.why;
    check(leaseA.signal.aborted && why === "released", `release: expected the signal aborted with LeaseLostError released, got ${why}`);
    await expectError(LeaseLostError, () => leaseA.put("greeting", "after release"), "release: a write through the released lease");
    step("release");

    // 7. Handover.
    const leaseB = await b.acquire(resource, { ttl: HELD_TTL });
    const tokenB = leaseB.token;
    check(tokenB.generation > tokenA.generation, `handover: expected a generation greater than ${tokenA.generation}, got ${tokenB.generation}`);
    const observedBy = Date.now() + 5000;
    while (!observed.some((x) => x.token?.generation === tokenB.generation) && Date.now() < observedBy) await sleep(20);
    const gens = observed.filter((x) => x.held).map((x) => x.token?.generation);
    const revisions = observed.map((x) => x.revision);
    check(gens.indexOf(tokenA.generation) !== -1 && gens.indexOf(tokenA.generation) < gens.indexOf(tokenB.generation), `handover: observe: expected generation ${tokenA.generation} then ${tokenB.generation}, saw ${gens.join(", ")}`);
    check(revisions.every((r, i) => i === 0 || r > revisions[i - 1]), `handover: observe: revisions not increasing: ${revisions.join(", ")}`);
    step(`handover: generation ${tokenB.generation}, observed`);

    // 8. Fencing.
    const valueB = "hello from ts-sdk-b";
    await leaseB.put("greeting", valueB);
    const stale = await expectError(StaleTokenError, () => a.store.put(tokenA, "greeting", "stale"), "fencing: a put with the old token");
    check(stale.reason === "STALE_TOKEN" && stale.fence === tokenB.generation && stale.generation === tokenA.generation, `fencing: expected STALE_TOKEN with fence ${tokenB.generation}, got ${stale.reason} fence ${stale.fence}`);
    const after = await a.store.get(resource, "greeting");
    check(new TextDecoder().decode(after.value) === valueB, "fencing: the refused put changed the value");
    step(`fencing: old token refused with STALE_TOKEN, fence ${stale.fence}`);

    // 8b. Coalescing: 64 concurrent writes under B's token, and among them 4 under A's stale one, through one
    // client. The SDK carries them in fewer calls than writes; each write keeps the answer it would get alone.
    const sentBefore = callsB.sent;
    const concurrent = Array.from({ length: 68 }, (_, i) => (i % 17 === 16 ? { stale: true, key: `coalesce-stale-${i}` } : { stale: false, key: `coalesce-${i}` }));
    const answers = await Promise.allSettled(concurrent.map((w) => (w.stale ? b.store.put(tokenA, w.key, "stale") : leaseB.put(w.key, w.key))));
    const coalescedIn = callsB.sent - sentBefore;
    answers.forEach((r, i) => {
      const { stale: isStale, key } = concurrent[i];
      if (isStale) {
        const e = r.status === "rejected" ? r.reason : undefined;
        check(e instanceof StaleTokenError && e.fence === tokenB.generation && e.generation === tokenA.generation, `coalesce: expected the stale write ${key} refused STALE_TOKEN with fence ${tokenB.generation}, got ${r.status === "fulfilled" ? "a commit" : String(r.reason)}`);
      } else {
        check(r.status === "fulfilled" && r.value.fence === tokenB.generation && r.value.revision > 0n, `coalesce: expected ${key} committed at fence ${tokenB.generation}, got ${r.status === "fulfilled" ? `fence ${r.value.fence}` : String(r.reason)}`);
      }
    });
    const written: string[] = [];
    for await (const e of b.store.list(resource, { prefix: "coalesce-" })) written.push(`${e.key}=${new TextDecoder().decode(e.value)}`);
    const expected = concurrent.filter((w) => !w.stale).map((w) => `${w.key}=${w.key}`);
    check(written.sort().join(",") === expected.sort().join(","), `coalesce: expected the 64 writes applied and the 4 stale ones not, got ${written.length} keys: ${written.join(", ")}`);
    // (Lost by its deadline on a machine too loaded to renew in time, it is not what this step checks.)
    const lostB = leaseB.signal.reason as LeaseLostError | undefined;
    check(lostB?.why !== "fenced", `coalesce: the stale writes of another token ended B's lease: ${String(lostB)}`);
    step(`coalesce: 64 concurrent writes, each answered on its own, in ${coalescedIn} calls`);
    step("coalesce: 4 stale writes among them refused alone: STALE_TOKEN");

    // Several resources, all or nothing (acquireAll), taken in the order of their names.
    {
      const names = [`${resource}-m3`, `${resource}-m2`, `${resource}-m1`];
      const held = await a.acquire(names[1], { ttl: TTL, ownLease: true });
      await expectError(ResourceHeldError, () => a.acquireAll(names, { ttl: TTL }), "multi-lock: refused while one is held");
      const [m3, m1] = [await a.describe(names[0]), await a.describe(names[2])];
      check(!m3.held && !m1.held, "multi-lock: a refused acquireAll left a resource held");
      check(m3.lastIssued === 0n, `multi-lock: ${names[0]}, after the held one in name order, was acquired`);
      await held.release();
      const leases = await a.acquireAll(names, { ttl: TTL, wait: 10_000 });
      check(leases.map((l) => l.token.resource).join() === names.join(), `multi-lock: leases of ${leases.map((l) => l.token.resource).join()}, expected ${names.join()}`);
      await Promise.all(leases.map((l) => l.release()));
      step("multi-lock: all or nothing over 3 resources, refused whole while one is held, granted once it is free");
    }

    // 9. Bad input.
    await expectError(InvalidArgumentError, () => a.acquire("", { ttl: TTL }), "bad input: acquire with an empty resource");
    step("bad input: acquire with an empty resource");
    await expectError(InvalidArgumentError, () => a.acquire(`${resource}-short`, { ttl: 1000 }), "bad input: acquire with ttl 1s");
    step("bad input: acquire with ttl 1s");
    const held = await expectError(ResourceHeldError, () => a.acquire(resource, { ttl: TTL }), "bad input: acquire of a held resource without waiting");
    check(held.reason === "RESOURCE_HELD" && held.holder === "ts-sdk-b" && held.holderToken?.generation === tokenB.generation, `bad input: expected RESOURCE_HELD by ts-sdk-b, got ${held.reason} by ${held.holder}`);
    step("bad input: acquire of a held resource without waiting");
    await expectError(TimeoutError, () => a.acquire(resource, { ttl: TTL, wait: 300 }), "bad input: waiting at most 300 ms for a held resource");
    step("bad input: waiting at most 300 ms for a held resource");

    // Waiting in line: granted at the holder's release, 1.5 s later, and counted from the renewal that confirmed it.
    const leaseFirst = await b.acquire(`${resource}-line`, { ttl: TTL });
    const waiting = a.acquire(`${resource}-line`, { ttl: TTL, wait: 10_000 });
    await sleep(1500);
    await leaseFirst.release();
    const leaseW = await waiting;
    const left = leaseW.validUntil.getTime() - Date.now();
    check(left >= TTL - defaultDriftMs(TTL) - 1000, `wait: a lease granted after a wait in line is valid for ${left} ms only: its deadline counts from the Acquire's send`);
    await leaseW.release();
    step("wait: granted in line at the holder's release, valid from its confirming renewal");

    // Cancelling, TypeScript's way (docs/client-semantics.md): the signal given to acquire() ends the wait,
    // and, once the lease is granted, releases it (loss reason canceled). Go's context bounds the call alone.
    await expectError(CanceledError, () => a.acquire(resource, { ttl: TTL, wait: true, signal: AbortSignal.timeout(300) }), "cancel: a cancelled wait");
    const holding = new AbortController();
    const leaseD = await a.acquire(`${resource}-canceled`, { ttl: TTL, signal: holding.signal });
    holding.abort();
    check((leaseD.signal.reason as LeaseLostError | undefined)?.why === "canceled", `cancel: expected the lease lost with reason canceled, got ${(leaseD.signal.reason as LeaseLostError | undefined)?.why}`);
    await leaseD.release(); // waits for the release on the server
    check(!(await a.describe(`${resource}-canceled`)).held, "cancel: expected the cancelled lease released on the server");
    step("cancel: a cancelled wait fails CanceledError; the abort of the signal given to acquire() releases the granted lease (TypeScript's design)");

    // A lease the server no longer knows (released with its token, or on sessions its session closed,
    // behind the holder's back): its next renewal is answered NOT_FOUND, which ends it.
    const leaseC = await a.acquire(`${resource}-gone`, { ttl: TTL });
    await releaseBehindBack(servers[0], credentials, leaseC.token, sessions);
    const lostBy = Date.now() + TTL;
    while (!leaseC.signal.aborted && Date.now() < lostBy) await sleep(20);
    const lostC = leaseC.signal.reason as LeaseLostError | undefined;
    check(lostC?.why === "not-found" && lostC.cause instanceof LeaseNotFoundError, `not found: expected LeaseLostError not-found caused by LeaseNotFoundError, got ${lostC?.why} (${String(lostC?.cause)})`);
    step(`not found: a renewal answered LEASE_NOT_FOUND ends the lease${sessions ? " (its session closed behind its back)" : ""}`);

    // 10. Clean up, through withLease: it runs, then releases.
    await leaseB.release();
    let ran = false;
    await b.withLease(resource, (l, signal) => (ran = l.token.generation > tokenB.generation && !signal.aborted), { ttl: TTL });
    check(ran, "clean up: withLease did not run with a newer lease");
    check(!(await b.describe(resource)).held, `clean up: expected ${resource} released after withLease`);
    stopObserving.abort();
    await observing;
    step("clean up");
  } finally {
    stopObserving.abort();
    await Promise.all([a.close(), b.close(), observer.close()]);
  }
}

/**
 * Releases a token (on sessions: closes its session) from a connection of its own, as an operator would:
 * the SDK has no call for another's token.
 */
async function releaseBehindBack(url: string, credentials: Credentials, token: Token, onSession: boolean): Promise<void> {
  const session = new Http2SessionManager(url, undefined, credentials.tls);
  try {
    const bearer = typeof credentials.bearer === "string" ? credentials.bearer : undefined;
    const transport = createGrpcTransport({
      baseUrl: url,
      sessionManager: session,
      interceptors: bearer ? [(next) => (req) => (req.header.set("authorization", `Bearer ${bearer}`), next(req))] : [],
    });
    const lease = createClient(LeaseService, transport);
    if (onSession) await lease.closeSession({ sessionId: token.leaseId });
    else await lease.release({ token: tokenToProto(token) });
  } finally {
    session.abort();
  }
}
