// The keepalive-flood nemesis: another caller (a principal of its own, FLOODER) opens many KeepAlive
// streams to the replicas and floods them for a few seconds with a few thousand messages: half renew
// its own session, half name lease ids that exist nowhere (each costs the server a binding read). The
// server reads a caller that sends faster than --max-stream-messages-per-second more slowly; what
// matters is that the workload's own renewals keep being answered, and that no worker's lease is lost
// to the flood (checker.ts, property renewals; report.ts counts the renewals invoked during a flood).
import { readFileSync } from "node:fs";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { ClientCredentials } from "./auth.js";
import { Rng } from "./rng.js";

/** The principal that floods (the policy lets it open sessions and renew them, nothing more). */
export const FLOODER = "flooder";

export interface FloodPlan {
  streams: number;
  messages: number;
  ms: number;
  /** Seeds the lease ids nobody has that it names. */
  seed: number;
}

export interface FloodResult {
  sent: number;
  renewed: number;
  /** Answers that refused a message, by reason (or code). */
  refused: Map<string, number>;
  /** Streams that ended with an error, by code. */
  ended: Map<string, number>;
}

export const planFlood = (rng: Rng): FloodPlan => ({ streams: rng.int(8, 32), messages: rng.int(2_000, 5_000), ms: rng.int(2_000, 4_000), seed: rng.int(1, 2 ** 31) });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Floods the servers' KeepAlive as FLOODER, per the plan; resolves once every stream has ended. */
export async function flood(servers: string[], credentials: ClientCredentials, plan: FloodPlan): Promise<FloodResult> {
  const rng = new Rng(plan.seed);
  const tls = { ca: readFileSync(credentials.tls.ca), cert: readFileSync(credentials.tls.cert), key: readFileSync(credentials.tls.key) };
  const bearer: Interceptor = (next) => (req) => {
    if (credentials.bearer) req.header.set("authorization", `Bearer ${credentials.bearer}`);
    return next(req);
  };
  const transports = servers.map((url) => createGrpcTransport({ baseUrl: url, interceptors: [bearer], nodeOptions: tls }));
  const clients = transports.map((t) => createClient(LeaseService, t));
  const result: FloodResult = { sent: 0, renewed: 0, refused: new Map(), ended: new Map() };
  const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  let session: bigint | undefined;
  try {
    session = (await clients[0].openSession({ ttl: { seconds: 10n, nanos: 0 }, holder: FLOODER }, { timeoutMs: 4_000 })).sessionId;
  } catch (err) {
    count(result.ended, `OpenSession ${Code[ConnectError.from(err).code]}`);
  }
  const deadline = Date.now() + plan.ms;
  const perStream = Math.ceil(plan.messages / plan.streams);
  // Lease ids nobody has: etcd's ids are below 2^63; these are chosen from the seed.
  const strangers = Array.from({ length: 64 }, () => BigInt(rng.int(1, 2 ** 31)) * 4_294_967_296n + BigInt(rng.int(1, 2 ** 31)));
  await Promise.all(
    Array.from({ length: plan.streams }, async (_, s) => {
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), plan.ms + 3_000);
      async function* requests() {
        for (let i = 0; i < perStream && Date.now() < deadline; i++) {
          result.sent++;
          yield { leaseId: session !== undefined && i % 2 === 0 ? session : strangers[(s * perStream + i) % strangers.length] };
          // A burst of 50, then a breath: thousands of messages over the plan's seconds.
          if (i % 50 === 49) await sleep(Math.max(1, Math.floor(plan.ms / (perStream / 50)) - 5));
        }
      }
      try {
        for await (const res of clients[s % clients.length].keepAlive(requests(), { signal: ac.signal })) {
          if (res.error) count(result.refused, Code[res.error.code] ?? String(res.error.code));
          else result.renewed++;
        }
      } catch (err) {
        count(result.ended, Code[ConnectError.from(err).code]);
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  if (session !== undefined) await clients[0].closeSession({ sessionId: session }, { timeoutMs: 4_000 }).catch(() => {});
  return result;
}

export const describeFlood = (p: FloodPlan, r: FloodResult): string => {
  const map = (m: Map<string, number>) => [...m].map(([k, n]) => `${k} ${n}`).join(", ") || "none";
  return `KeepAlive flood by "${FLOODER}": ${p.streams} streams, ${r.sent} messages in ${p.ms} ms; ${r.renewed} renewals answered, refused ${map(r.refused)}; streams ended by ${map(r.ended)}`;
};
