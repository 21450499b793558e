// The scenario of test/conformance/SCENARIO.md, with the generated stubs and the gRPC library given.
import { FenceMode, type FencingToken } from "../../../gen/ts/fencekeeper/v1/token_pb.js";
import type { ObserveResponse } from "../../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { Api, Auth, Library } from "./api.js";

const TTL_SECONDS = 2;
const KEEPALIVE_EVERY_MS = 600;
const KEEPALIVE_FOR_MS = 7000;

const ttl = (seconds: number) => ({ seconds: BigInt(seconds), nanos: 0 });
const text = (s: string) => new TextEncoder().encode(s);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A step of the scenario did not go as SCENARIO.md says. */
export class Unexpected extends Error {}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Unexpected(message);
}

const step = (message: string) => console.log(`ok ${message}`);

export async function runScenario(library: Library, server: string, resource: string, auth: Auth = {}): Promise<void> {
  const [a, b, observer] = [library.connect(server, auth), library.connect(server, auth), library.connect(server, auth)];
  const stopObserving = new AbortController();
  try {
    await scenario(library, a, b, observer, stopObserving.signal, resource);
  } finally {
    stopObserving.abort();
    for (const client of [a, b, observer]) client.close();
  }
}

async function scenario(library: Library, a: Api, b: Api, observer: Api, observing: AbortSignal, resource: string) {
  const name = library.name;

  /** Runs call and checks that it fails with code and, unless empty, reason. */
  async function expectFailure(call: () => Promise<unknown>, code: string, reason = ""): Promise<void> {
    let error: unknown;
    try {
      await call();
    } catch (e) {
      error = e;
    }
    check(error !== undefined, `expected ${code}, and the call succeeded`);
    const f = library.failureOf(error);
    check(f !== undefined, `expected ${code}, got ${String(error)}`);
    check(f.code === code && (!reason || f.reason === reason), `expected ${code} ${reason}, got ${f.code} ${f.reason} (${String(error)})`);
    check(!reason || f.domain === "fencekeeper.io", `expected ErrorInfo domain fencekeeper.io, got ${f.domain}`);
  }

  // 1. Observe.
  const stream = observer.observe({ resource }, observing)[Symbol.asyncIterator]();
  const first = await stream.next();
  check(!first.done && !first.value.held, `observe: expected ${resource} not held at first`);
  const observed: ObserveResponse[] = [];
  void (async () => {
    for (let next = await stream.next(); !next.done; next = await stream.next()) observed.push(next.value);
  })().catch(() => {
    // cancelled at the end
  });
  step(`observe: ${resource} not held`);

  // 2. Acquire.
  const acquired = await a.acquire({ resource, ttl: ttl(TTL_SECONDS), holder: `${name}-a` });
  const tokenA = acquired.token!;
  check(
    tokenA.resource === resource && tokenA.generation > 0n && acquired.ttl?.seconds === BigInt(TTL_SECONDS),
    `acquire: expected a token for ${resource} with a positive generation and ttl 2s, got ${tokenA.generation} ttl ${acquired.ttl?.seconds}`,
  );
  step(`acquire: generation ${tokenA.generation}, lease ${tokenA.leaseId}`);

  // 3. Put.
  const valueA = `hello from ${name}-a`;
  const put = await a.put({
    resource,
    key: "greeting",
    value: text(valueA),
    mutation: { token: tokenA, mode: FenceMode.ORDER, idempotencyKey: `${resource}-put-a` },
  });
  check(put.commit?.fence === tokenA.generation, `put: expected fence ${tokenA.generation}, got ${put.commit?.fence}`);
  step(`put: fence ${put.commit.fence}`);

  // 4. Get.
  let got = await a.get({ resource, key: "greeting" });
  check(
    got.found && decode(got.value) === valueA && got.fence === tokenA.generation,
    `get: expected '${valueA}' at fence ${tokenA.generation}, got found=${got.found} '${decode(got.value)}' at fence ${got.fence}`,
  );
  step(`get: '${decode(got.value)}'`);

  // 5. KeepAlive.
  await keepAlive(a, tokenA);
  const described = await a.describe({ resource });
  check(
    described.held && described.token?.generation === tokenA.generation,
    `keepalive: expected ${resource} still held by generation ${tokenA.generation}, got held=${described.held} generation ${described.token?.generation}`,
  );
  step(`keepalive: still held after ${KEEPALIVE_FOR_MS} ms (TTL 2s)`);

  // 6. Release.
  await a.release({ token: tokenA });
  step("release");

  // 7. Handover.
  const tokenB = (await b.acquire({ resource, ttl: ttl(TTL_SECONDS), holder: `${name}-b` })).token!;
  check(
    tokenB.generation > tokenA.generation,
    `handover: expected a generation greater than ${tokenA.generation}, got ${tokenB.generation}`,
  );
  await awaitHandover(observed, tokenA.generation, tokenB.generation);
  step(`handover: generation ${tokenB.generation}, observed`);

  // 8. Fencing.
  const valueB = `hello from ${name}-b`;
  await b.put({ resource, key: "greeting", value: text(valueB), mutation: { token: tokenB } });
  await expectFailure(
    () => a.put({ resource, key: "greeting", value: text("stale"), mutation: { token: tokenA } }),
    "FAILED_PRECONDITION",
    "STALE_TOKEN",
  );
  got = await a.get({ resource, key: "greeting" });
  check(decode(got.value) === valueB, `fencing: expected '${valueB}' after the refused put, got '${decode(got.value)}'`);
  step("fencing: old token refused with STALE_TOKEN");

  // 9. Bad input.
  const badInputs: [string, string, string, () => Promise<unknown>][] = [
    ["acquire with an empty resource", "INVALID_ARGUMENT", "", () => a.acquire({ resource: "", ttl: ttl(TTL_SECONDS) })],
    ["acquire with ttl 1s", "INVALID_ARGUMENT", "", () => a.acquire({ resource: `${resource}-short`, ttl: ttl(1) })],
    ["put without a token", "INVALID_ARGUMENT", "", () => a.put({ resource, key: "greeting", value: text("x") })],
    ["renew of an unknown lease", "NOT_FOUND", "LEASE_NOT_FOUND", () => a.renew({ leaseId: 0x7fffffff00000001n })],
    [
      "acquire of a held resource without waiting",
      "ABORTED",
      "RESOURCE_HELD",
      () => a.acquire({ resource, ttl: ttl(TTL_SECONDS), holder: `${name}-c` }),
    ],
  ];
  for (const [what, code, reason, call] of badInputs) {
    try {
      await expectFailure(call, code, reason);
    } catch (e) {
      throw new Unexpected(`bad input: ${what}: ${(e as Error).message}`);
    }
    step(`bad input: ${what}: ${code}`);
  }

  // 10. Clean up.
  await b.release({ token: tokenB });
  step("clean up");
}

/** Renews the lease of token over one KeepAlive stream every KEEPALIVE_EVERY_MS for KEEPALIVE_FOR_MS, and checks every answer. */
async function keepAlive(client: Api, token: FencingToken): Promise<void> {
  let sent = 0;
  async function* requests() {
    for (const deadline = Date.now() + KEEPALIVE_FOR_MS; Date.now() < deadline; sent++) {
      yield { leaseId: token.leaseId };
      await sleep(KEEPALIVE_EVERY_MS);
    }
  }
  let answers = 0;
  for await (const answer of client.keepAlive(requests())) {
    check(
      answer.leaseId === token.leaseId && answer.ttl !== undefined && answer.error === undefined,
      `keepalive: expected a renewal of lease ${token.leaseId}, got lease ${answer.leaseId} error ${answer.error?.message}`,
    );
    answers++;
  }
  check(answers === sent, `keepalive: sent ${sent} renewals, got ${answers} answers`);
}

/** Waits until the observer has seen generation a and then generation b hold the resource, with increasing revisions. */
async function awaitHandover(observed: ObserveResponse[], a: bigint, b: bigint): Promise<void> {
  const deadline = Date.now() + 5000;
  let seenA = false;
  let revision = 0n;
  for (let i = 0; ; i++) {
    while (i >= observed.length) {
      check(Date.now() < deadline, `handover: generation ${b} (after ${a}) not seen within 5s`);
      await sleep(20);
    }
    const message = observed[i];
    check(message.revision > revision, `handover: revision ${message.revision} after ${revision}`);
    revision = message.revision;
    if (message.held && message.token?.generation === a) {
      seenA = true;
    } else if (message.held && message.token?.generation === b) {
      check(seenA, `handover: generation ${b} seen without generation ${a} before it`);
      return;
    }
  }
}
