// A bystander's renewals while another caller floods KeepAlive (issue 38: "under a 150-stream KeepAlive
// flood a bystander's renewal took 4.8 s of its 5 s TTL"), at the server's default budgets: a flooder
// (a principal of its own, bearer JWT) renews its leases one id a message, as fast as its streams take
// them, over --streams streams on 3 connections; the bystander renews one lease every 500 ms on a stream
// of its own and asks Describe every 250 ms. The same bystander runs first alone, then beside the flood,
// in one run: the table gives both and their ratio, with the flood's rate and the server's CPU.
//
//   node --import tsx bench/keepalive-flood.ts [--streams 150] [--seconds 15] [--cpu-prof DIR]
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

const { values } = parseArgs({ options: { streams: { type: "string", default: "150" }, seconds: { type: "string", default: "15" }, "cpu-prof": { type: "string" } } });
const STREAMS = Number(values.streams);
const SECONDS = Number(values.seconds);
const FLOOD_LEASES = 300;
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
  describes: number[];
  errors: string[];
}

/** The bystander for ms: its renewal and Describe latencies. */
async function bystander(ms: number): Promise<Bystander> {
  const c = await connection("bystander");
  const lease = (await c.acquire({ resource: `flood-bystander-${Date.now()}`, ttl: ttl(5), holder: "bystander" })).token!.leaseId;
  const out: Bystander = { renewals: [], describes: [], errors: [] };
  const started = Date.now();
  const asked: number[] = [];
  const renewing = (async () => {
    for await (const a of c.keepAlive(
      (async function* () {
        while (Date.now() - started < ms) {
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
  await Promise.all([renewing, describing]);
  await c.release({ token: { resource: "", generation: 0n, leaseId: lease } }).catch(() => undefined);
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
          for (let i = 0; !stop.signal.aborted; i++) yield { leaseId: leases[(s * 7 + i) % leases.length] };
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
  stop.abort();
  await Promise.all(floods);

  const table = new Table(`a bystander's KeepAlive renewals (every 500 ms, TTL 5 s), alone and beside a flood by another principal, ${SECONDS} s each`, [
    { title: "bystander", width: 28, left: true },
    { title: "renewals", width: 8 },
    { title: "p50 ms", width: 7 },
    { title: "p99 ms", width: 7 },
    { title: "max ms", width: 7 },
    { title: "Describe max ms", width: 7 },
    { title: "errors", width: 6 },
    { title: "flood renewals/s", width: 8 },
    { title: "server CPU", width: 6 },
  ]);
  const row = (what: string, b: Bystander, rate: number, cpu: number) =>
    table.row([what, String(b.renewals.length), num(pctile(b.renewals, 50)), num(pctile(b.renewals, 99)), num(Math.max(...b.renewals)), num(Math.max(...b.describes)), String(b.errors.length), num(rate), num(cpu, 2)]);
  row("alone", alone, 0, NaN);
  row(`beside a ${STREAMS}-stream flood`, beside, floodRate, after && before ? (after.cpuSeconds - before.cpuSeconds) / elapsed : NaN);
  table.note(`the bystander's renewals beside the flood, ms, in order: ${beside.renewals.join(" ")}`);
  table.note(`beside the flood / alone: p99 ${num(pctile(beside.renewals, 99) / pctile(alone.renewals, 99), 1)}x, max ${num(Math.max(...beside.renewals) / Math.max(...alone.renewals), 1)}x`);
} finally {
  await server.stop();
  await etcd.stop();
  rmSync(dir, { recursive: true, force: true });
}
