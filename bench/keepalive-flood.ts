// A bystander's renewals while another caller floods KeepAlive (issue 38: "under a 150-stream KeepAlive
// flood a bystander's renewal took 4.8 s of its 5 s TTL"), at the server's default budgets: a flooder
// (a principal of its own, bearer JWT) renews its leases one id a message, as fast as its streams take
// them, over --streams streams on 3 connections; the bystander renews one lease every 500 ms on a stream
// of its own and asks Describe every 250 ms. The same bystander runs first alone, then beside the flood,
// in one run: the table gives both and their ratio, with the flood's rate and the server's CPU. The
// bystander also renews a second lease on a fresh stream each time and a third by unary Renew, every
// 500 ms: each of those renewals reads the lease's binding from etcd first, so they show whether the
// flood's own binding reads keep another caller's waiting. A third phase runs the bystander without the
// stream it keeps open (fresh streams and Renew only, as a client that renews by unary calls does): the
// server must see it as a caller to be fair to even while none of its streams is open. With --stranger-share, that share of the
// flood's messages name lease ids nobody has (each costs the server a binding read that finds nothing,
// as the fault profile's flood does).
//
//   node --import tsx bench/keepalive-flood.ts [--streams 150] [--seconds 15] [--stranger-share 0.5] [--cpu-prof DIR]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { setMaxListeners } from "node:events";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { exportSPKI, generateKeyPair, SignJWT } from "jose";
import { LeaseService } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { startEmbeddedEtcd } from "../server/etcd/embedded.js";
import { startServer } from "../test/harness/server.js";
import { readProcess } from "./process-stats.js";
import { num, Table } from "./report.js";

const { values } = parseArgs({ options: { streams: { type: "string", default: "150" }, seconds: { type: "string", default: "15" }, "stranger-share": { type: "string", default: "0" }, "cpu-prof": { type: "string" } } });
const STREAMS = Number(values.streams);
const SECONDS = Number(values.seconds);
const FLOOD_LEASES = 300;
const STRANGER_SHARE = Number(values["stranger-share"]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const ROOT = fileURLToPath(new URL("..", import.meta.url));

const dir = mkdtempSync(join(tmpdir(), "fencekeeper-bench-flood-"));
const etcd = await startEmbeddedEtcd({ dataDir: join(dir, "etcd") });
const { publicKey, privateKey } = await generateKeyPair("ES256");
writeFileSync(join(dir, "jwt.pem"), await exportSPKI(publicKey));
const prof = values["cpu-prof"];
const server = await startServer({
  etcd: etcd.endpoint,
  args: ["--jwt-keys", join(dir, "jwt.pem"), "--jwt-issuer", "https://issuer.test", "--jwt-audience", "fencekeeper"],
  ...(prof ? { command: [process.execPath, "--cpu-prof", "--cpu-prof-dir", prof, "--import", "tsx", `${ROOT}server/main.ts`] } : {}),
});

/** A connection of its own, as principal sub. */
async function connection(sub: string): Promise<Client<typeof LeaseService>> {
  const jwt = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).setSubject(sub).setIssuer("https://issuer.test").setAudience("fencekeeper").setExpirationTime("1h").sign(privateKey);
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${jwt}`);
    return next(req);
  };
  return createClient(LeaseService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer] }));
}

interface Bystander {
  renewals: number[];
  /** Renewals each on a stream opened for it, and by unary Renew: a binding read each. */
  fresh: number[];
  unary: number[];
  describes: number[];
  errors: string[];
}

/** The bystander for ms: its renewal and Describe latencies. */
async function bystander(ms: number, keepsStream = true): Promise<Bystander> {
  const c = await connection("bystander");
  const [lease, freshLease, unaryLease] = await Promise.all(
    ["stream", "fresh", "unary"].map(async (k) => (await c.acquire({ resource: `flood-bystander-${k}-${Date.now()}`, ttl: ttl(5), holder: "bystander" })).token!.leaseId),
  );
  const out: Bystander = { renewals: [], fresh: [], unary: [], describes: [], errors: [] };
  const started = Date.now();
  const asked: number[] = [];
  const renewing = (async () => {
    for await (const a of c.keepAlive(
      (async function* () {
        while (keepsStream && Date.now() - started < ms) {
          asked.push(Date.now());
          yield { leaseId: lease };
          await sleep(500);
        }
      })(),
    )) {
      if (a.error) out.errors.push(a.error.message);
      out.renewals.push(Date.now() - asked.shift()!);
    }
  })();
  const describing = (async () => {
    while (Date.now() - started < ms) {
      const t = Date.now();
      await c.describe({ resource: "flood-probe" });
      out.describes.push(Date.now() - t);
      await sleep(250);
    }
  })();
  const freshStreams = (async () => {
    while (Date.now() - started < ms) {
      const t = Date.now();
      for await (const a of c.keepAlive((async function* () { yield { leaseId: freshLease }; })())) {
        if (a.error) out.errors.push(a.error.message);
        out.fresh.push(Date.now() - t);
      }
      await sleep(500);
    }
  })();
  const unary = (async () => {
    while (Date.now() - started < ms) {
      const t = Date.now();
      await c.renew({ leaseId: unaryLease }).catch((err: Error) => out.errors.push(err.message));
      out.unary.push(Date.now() - t);
      await sleep(500);
    }
  })();
  await Promise.all([renewing, describing, freshStreams, unary]);
  for (const id of [lease, freshLease, unaryLease]) await c.release({ token: { resource: "", generation: 0n, leaseId: id } }).catch(() => undefined);
  return out;
}

const pctile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;

try {
  const alone = await bystander(SECONDS * 1000);

  const flooders = await Promise.all([0, 1, 2].map(() => connection("flooder")));
  const leases: bigint[] = [];
  for (let i = 0; i < FLOOD_LEASES; i += 50) {
    const got = await Promise.all(Array.from({ length: 50 }, (_, j) => flooders[0].acquire({ resource: `flood-${i + j}-${Date.now()}`, ttl: ttl(60), holder: "flooder" })));
    leases.push(...got.map((g) => g.token!.leaseId));
  }
  const stop = new AbortController();
  setMaxListeners(STREAMS + 10, stop.signal);
  let flooded = 0;
  const floods = Array.from({ length: STREAMS }, async (_, s) => {
    try {
      for await (const _ of flooders[s % 3].keepAlive(
        (async function* () {
          for (let i = 0; !stop.signal.aborted; i++) {
            // Ids nobody has: below etcd's 2^63, chosen afresh, so that no stream has seen them before.
            const stranger = Math.random() < STRANGER_SHARE;
            yield { leaseId: stranger ? BigInt(Math.floor(Math.random() * 2 ** 31)) * 4_294_967_296n + BigInt(s * 1_000_000 + i) : leases[(s * 7 + i) % leases.length] };
          }
        })(),
        { signal: stop.signal },
      )) {
        flooded++;
      }
    } catch {
      // ended by stop
    }
  });
  await sleep(1000); // the flood under way
  const pid = server.process.pid!;
  const before = readProcess(pid);
  const floodedBefore = flooded;
  const t0 = Date.now();
  const beside = await bystander(SECONDS * 1000);
  const elapsed = (Date.now() - t0) / 1000;
  const after = readProcess(pid);
  const floodRate = (flooded - floodedBefore) / elapsed;
  const before2 = readProcess(pid);
  const floodedBefore2 = flooded;
  const t2 = Date.now();
  const streamless = await bystander(SECONDS * 1000, false);
  const elapsed2 = (Date.now() - t2) / 1000;
  const after2 = readProcess(pid);
  const floodRate2 = (flooded - floodedBefore2) / elapsed2;
  stop.abort();
  await Promise.all(floods);

  const table = new Table(`a bystander's KeepAlive renewals (every 500 ms, TTL 5 s), alone and beside a flood by another principal (${STRANGER_SHARE * 100}% of its messages naming ids nobody has), ${SECONDS} s each`, [
    { title: "bystander", width: 28, left: true },
    { title: "renewals", width: 8 },
    { title: "p50 ms", width: 7 },
    { title: "p99 ms", width: 7 },
    { title: "max ms", width: 7 },
    { title: "fresh stream p99/max ms", width: 11 },
    { title: "Renew p99/max ms", width: 11 },
    { title: "Describe max ms", width: 7 },
    { title: "errors", width: 6 },
    { title: "flood renewals/s", width: 8 },
    { title: "server CPU", width: 6 },
  ]);
  const row = (what: string, b: Bystander, rate: number, cpu: number) =>
    table.row([what, String(b.renewals.length), num(pctile(b.renewals, 50)), num(pctile(b.renewals, 99)), b.renewals.length > 0 ? num(Math.max(...b.renewals)) : "-", `${num(pctile(b.fresh, 99))}/${num(Math.max(...b.fresh))}`, `${num(pctile(b.unary, 99))}/${num(Math.max(...b.unary))}`, num(Math.max(...b.describes)), String(b.errors.length), num(rate), num(cpu, 2)]);
  row("alone", alone, 0, NaN);
  row(`beside a ${STREAMS}-stream flood`, beside, floodRate, after && before ? (after.cpuSeconds - before.cpuSeconds) / elapsed : NaN);
  row("the same, no stream kept open", streamless, floodRate2, after2 && before2 ? (after2.cpuSeconds - before2.cpuSeconds) / elapsed2 : NaN);
  table.note(`the bystander's renewals beside the flood, ms, in order: ${beside.renewals.join(" ")}`);
  table.note(`beside the flood / alone: p99 ${num(pctile(beside.renewals, 99) / pctile(alone.renewals, 99), 1)}x, max ${num(Math.max(...beside.renewals) / Math.max(...alone.renewals), 1)}x`);
  table.note(`with no stream kept open, fresh-stream renewals / alone: p99 ${num(pctile(streamless.fresh, 99) / pctile(alone.fresh, 99), 1)}x; unary Renew ${num(pctile(streamless.unary, 99) / pctile(alone.unary, 99), 1)}x`);
} finally {
  await server.stop();
  await etcd.stop();
  rmSync(dir, { recursive: true, force: true });
}
