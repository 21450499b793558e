// The TypeScript SDK's test program for the SDK suite (test/sdk/typescript.test.ts), speaking the line
// protocol of the other languages' probes (sdk/go/cmd/fk-sdk-probe):
//
//   probe.ts scenario --server URLS --resource R [--bearer JWT] [--tls-ca F --tls-cert F --tls-key F]
//       the conformance scenario of test/conformance/SCENARIO.md through the SDK (scenario.ts)
//   probe.ts hold --server URLS --resource R [--ttl MS] [--holder H] [--sessions] [--shared] [--lock-delay MS] [--preempt]
//       acquires R and keeps it; prints one JSON line per event (granted, renewed, session-opened,
//       session-renewed, stream-opened, stream-failed, lost), then runs the commands it reads on stdin:
//         write K V   a write through the lease (checked first: a lost lease sends nothing)
//         force K V   a write with the lease's token through the store (FENCE_MODE_ORDER), whatever its state
//         state       the lease's state: held, valid_until, last_confirmed_at
//         release     releases the lease
//         describe    describe() of the resource: held, holders, lock_delay_ms, lock_delay_until
//         observe     the first state observe() gives (now): as describe, with max_holders and value
//         acquire     another acquire() of the resource, without waiting: its error's class, or its token
//       and exits at the end of stdin.
//   probe.ts elect --server URLS --resource R [--ttl MS] [--holder H] [--value V]
//       the SDK's lead() on R, and the election and semaphore commands (elect.ts)
//   probe.ts reasons
//       the error class the SDK raises for each reason of the generated ErrorReason enum, and for NOT_FOUND
//       without a reason, as one JSON object.
//
// Times are ms since the epoch; 64-bit integers are decimal strings.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { readFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { FencekeeperClient, FencekeeperError, LeaseLostError, PreemptedError, StaleTokenError, type Commit, type Credentials, type Token } from "../../../client/index.js";
import { toFencekeeperError } from "../../../client/error-mapping.js";
import { ErrorInfoSchema } from "../../../gen/ts/google/rpc/error_details_pb.js";
import { documentedReasons, generatedReasons } from "../reasons-table.js";
import { elect } from "./elect.js";
import { runScenario } from "./scenario.js";

/** FAILED_PRECONDITION for Code.FailedPrecondition, as the other probes print codes. */
export const codeName = (c: Code): string => Code[c].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
const fromCodeName = (name: string): Code => (Code as unknown as Record<string, Code>)[name.toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase())];

const print = (fields: Record<string, unknown>) => process.stdout.write(JSON.stringify(fields, (_, v) => (typeof v === "bigint" ? String(v) : v)) + "\n");
const tokenJson = (t: Token) => ({ resource: t.resource, generation: String(t.generation), lease_id: String(t.leaseId), shared: t.shared === true });

const [command, ...rest] = process.argv.slice(2);
const { values: o } = parseArgs({
  args: rest,
  options: {
    server: { type: "string" },
    resource: { type: "string" },
    ttl: { type: "string", default: "2000" },
    holder: { type: "string", default: "ts-probe" },
    sessions: { type: "boolean", default: false },
    shared: { type: "boolean", default: false },
    preempt: { type: "boolean", default: false },
    "lock-delay": { type: "string" },
    value: { type: "string", default: "" },
    linger: { type: "string", default: "0" },
    bearer: { type: "string" },
    "tls-ca": { type: "string" },
    "tls-cert": { type: "string" },
    "tls-key": { type: "string" },
  },
});

const credentials: Credentials = {
  ...(o.bearer ? { bearer: o.bearer } : {}),
  ...(o["tls-ca"] || o["tls-cert"]
    ? { tls: { ca: o["tls-ca"] && readFileSync(o["tls-ca"]), cert: o["tls-cert"] && readFileSync(o["tls-cert"]), key: o["tls-key"] && readFileSync(o["tls-key"]) } }
    : {}),
};

if (command === "reasons") {
  // The code each reason comes with, as the table of docs/client-semantics.md gives it.
  const table = documentedReasons();
  const reasons: Record<string, string | null> = {};
  for (const reason of generatedReasons()) {
    const code = table[reason] ? fromCodeName(table[reason].code) : Code.Unknown;
    const info = create(ErrorInfoSchema, { reason, domain: "fencekeeper.io", metadata: {} });
    const err = toFencekeeperError(new ConnectError("refused", code, undefined, [{ desc: ErrorInfoSchema, value: info }]));
    reasons[reason] = err.reason === reason ? err.constructor.name : null;
  }
  print({ reasons, not_found_without_reason: toFencekeeperError(new ConnectError("not found", Code.NotFound)).constructor.name });
} else if (command === "scenario") {
  try {
    await runScenario(o.server!.split(","), credentials, o.resource!, o.sessions);
  } catch (err) {
    const e = err as Error;
    const status = err instanceof FencekeeperError ? ` ${codeName(err.code)} ${err.reason ?? ""}` : "";
    process.stdout.write(`FAIL ${e.constructor.name}${status}: ${e.message}\n${e.stack}\n`);
    process.exitCode = 1;
  }
} else if (command === "hold") {
  await hold();
} else if (command === "elect") {
  await elect({ servers: o.server!.split(","), resource: o.resource!, ttl: Number(o.ttl), holder: o.holder!, value: o.value!, linger: Number(o.linger), credentials });
} else {
  process.stderr.write("usage: probe.ts scenario|hold|reasons --server URLS --resource R\n");
  process.exitCode = 2;
}

/** A write's outcome: ok with the fence, or the error's kind, code and reason, and whether it was sent. */
function outcome(commit: Commit | undefined, err: unknown): Record<string, unknown> {
  if (err === undefined) return { ok: true, fence: String(commit!.fence) };
  if (err instanceof LeaseLostError) return { ok: false, error: "LEASE_LOST", why: err.why, sent: false, message: err.message };
  if (err instanceof FencekeeperError) {
    return { ok: false, error: err.reason ?? err.constructor.name, code: codeName(err.code), reason: err.reason, sent: true, message: err.message, ...(err instanceof StaleTokenError ? { fence: String(err.fence) } : {}) };
  }
  return { ok: false, error: String(err), message: String(err) };
}

async function settle(call: () => Promise<Commit>): Promise<Record<string, unknown>> {
  try {
    return outcome(await call(), undefined);
  } catch (err) {
    return outcome(undefined, err);
  }
}

async function hold(): Promise<void> {
  const resource = o.resource!;
  const ttl = Number(o.ttl);
  const holder = o.holder!;
  // How long this process's event loop was held up since the last renewal: on a loaded machine a timer can
  // fire that much late, and a test that bounds when the loss came allows for it (the "lost" line says it).
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const client = new FencekeeperClient({
    servers: o.server!,
    credentials,
    holder,
    sessions: o.sessions,
    onEvent: (e) => {
      const at = Date.now();
      switch (e.type) {
        case "renewed":
        case "session-renewed":
          lag.reset();
          return print({ event: e.type, at, sent_at: e.sentAt.getTime(), confirmed_at: e.confirmedAt.getTime(), valid_until: e.validUntil.getTime(), clock_offset_ms: Date.now() - performance.now() });
        case "session-opened":
          return print({ event: e.type, at, session_id: String(e.sessionId) });
        case "stream-opened":
          return print({ event: e.type, at, url: e.url });
        case "stream-failed":
          return print({ event: e.type, at, url: e.url, error: String(e.error) });
      }
    },
  });
  const lease = await client.acquire(resource, { ttl, holder, shared: o.shared, preempt: o.preempt, ...(o["lock-delay"] ? { lockDelay: Number(o["lock-delay"]) } : {}) });
  print({ event: "granted", at: Date.now(), token: tokenJson(lease.token), ttl_ms: lease.ttlMs, valid_until: lease.validUntil.getTime() });
  // The loss signal, as a program would listen for it.
  lease.signal.addEventListener("abort", () => {
    const e = lease.signal.reason as LeaseLostError;
    if (e.why === "released") return;
    const p = e.cause instanceof PreemptedError ? { reason: e.cause.reason, by_generation: String(e.cause.byGeneration), by_principal: e.cause.byPrincipal } : {};
    print({ event: "lost", at: e.lostAt.getTime(), why: e.why, valid_until: e.validUntil.getTime(), last_confirmed_at: e.lastConfirmedAt.getTime(), loop_lag_ms: Math.round(lag.max / 1e6), clock_offset_ms: Date.now() - performance.now(), ...p });
  });
  for await (const line of createInterface({ input: process.stdin })) {
    const args = line.trim().split(/\s+/);
    const at = Date.now();
    switch (args[0]) {
      case "write":
        print({ event: "write", at, ...(await settle(() => lease.put(args[1], args[2]))), done_at: Date.now() });
        break;
      case "force":
        print({ event: "force", at, ...(await settle(() => client.store.put(lease.token, args[1], args[2], { mode: "order" }))), done_at: Date.now() });
        break;
      case "state":
        print({ event: "state", at, held: lease.held, valid_until: lease.validUntil.getTime(), last_confirmed_at: lease.lastConfirmedAt.getTime() });
        break;
      case "release":
        await lease.release();
        print({ event: "released", at: Date.now() });
        break;
      case "describe":
        try {
          const d = await client.describe(resource);
          print({
            event: "describe",
            at: Date.now(),
            held: d.held,
            holders: d.holders.map((h) => ({ holder: h.holder, generation: String(h.token.generation), ttl_ms: h.ttlMs })),
            lock_delay_ms: d.lockDelay ?? 0,
            ...(d.lockDelayUntil ? { lock_delay_until: d.lockDelayUntil.getTime() } : {}),
          });
        } catch (err) {
          print({ event: "describe", at: Date.now(), error: String(err) });
        }
        break;
      case "observe": {
        // The first message of observe(): the resource's state now.
        const stop = new AbortController();
        try {
          for await (const o of client.observe(resource, { signal: stop.signal })) {
            print({
              event: "observe",
              at: Date.now(),
              held: o.held,
              holders: o.holders.map((h) => ({ holder: h.holder, generation: String(h.token.generation), principal: h.token.principal, value: new TextDecoder().decode(h.value) })),
              lock_delay_ms: o.lockDelay ?? 0,
              ...(o.lockDelayUntil ? { lock_delay_until: o.lockDelayUntil.getTime() } : {}),
              max_holders: o.maxHolders,
              value: new TextDecoder().decode(o.value ?? new Uint8Array()),
            });
            break;
          }
        } catch (err) {
          print({ event: "observe", at: Date.now(), error: String(err) });
        } finally {
          stop.abort();
        }
        break;
      }
      case "acquire":
        try {
          const other = await client.acquire(resource, { ttl, holder });
          print({ event: "acquire", at: Date.now(), ok: true, token: tokenJson(other.token) });
          await other.release();
        } catch (err) {
          print({ event: "acquire", at: Date.now(), ok: false, error: (err as Error).constructor.name, message: String(err) });
        }
        break;
      default:
        if (args[0]) print({ event: "error", message: `unknown command: ${line}` });
    }
  }
  await client.close();
}
