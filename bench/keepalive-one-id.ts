// A plain stub client renewing many leases the way etcd's own LeaseKeepAlive protocol does (issue 21,
// target 6; issue 20, finding 3): one lease id a message, every lease every TTL/3, on one grpc-js
// KeepAlive stream, against a fresh server and etcd. Counts the leases lost and reads the server's and
// etcd's CPU (fraction of one core) and the server's RSS from /proc over the steady part of the run.
//
//   node --import tsx bench/keepalive-one-id.ts [--leases 10000] [--ttl 10] [--seconds 300] [--cpu-prof DIR]
//
// --cpu-prof DIR: the server runs under `node --cpu-prof`, its profile written to DIR at exit
// (read it with bench/profile-top.ts).
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmbeddedEtcd } from "../server/etcd/embedded.js";
import { startServer } from "../test/harness/server.js";
import { readProcess } from "./process-stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({
  options: { leases: { type: "string", default: "10000" }, ttl: { type: "string", default: "10" }, seconds: { type: "string", default: "300" }, "cpu-prof": { type: "string" } },
});
const LEASES = Number(values.leases);
const TTL = Number(values.ttl);
const SECONDS = Number(values.seconds);
const TICK_MS = 50;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const etcdDir = mkdtempSync(join(tmpdir(), "fencekeeper-bench-etcd-"));
const etcd = await startEmbeddedEtcd({ dataDir: etcdDir });
const prof = values["cpu-prof"];
const server = await startServer({
  etcd: etcd.endpoint,
  args: ["--log-level", "info"],
  ...(prof ? { command: [process.execPath, "--cpu-prof", "--cpu-prof-dir", prof, "--import", "tsx", "server/main.ts"] } : {}),
});
const def = protoLoader.loadSync(["fencekeeper/v1/lease.proto"], { includeDirs: [`${ROOT}/proto`, `${ROOT}/third_party/proto`], longs: String, defaults: true });
const v1 = (grpc.loadPackageDefinition(def) as any).fencekeeper.v1;
const address = server.url.replace("http://", "");
const client = new v1.LeaseService(address, grpc.credentials.createInsecure());
const unary = <T>(method: string, req: unknown) =>
  new Promise<T>((resolve, reject) => client[method](req, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res))));

const ids: string[] = [];
const lastRenewed = new Map<string, number>();
let errors = 0;
let firstError = "";
let answers = 0;
let longestGap = 0;
const stream = client.KeepAlive();
let cut: string | undefined;
stream.on("error", (e: grpc.ServiceError) => (cut = `${e.code} ${e.details}`));
stream.on("data", (a: { leaseId: string; error?: { message: string } }) => {
  answers++;
  if (a.error) {
    errors++;
    firstError ||= `${a.leaseId}: ${a.error.message}`;
    return;
  }
  const now = Date.now();
  longestGap = Math.max(longestGap, now - lastRenewed.get(a.leaseId)!);
  lastRenewed.set(a.leaseId, now);
});

// Acquire while renewing those acquired so far, 100 at a time.
const acquireStart = Date.now();
const acquiring = (async () => {
  let n = 0;
  const worker = async () => {
    while (n < LEASES) {
      n++;
      const g = await unary<{ token: { leaseId: string } }>("Acquire", { resource: `ka-bench-${process.pid}-${n}`, ttl: { seconds: TTL }, holder: "bench" });
      lastRenewed.set(g.token.leaseId, Date.now());
      ids.push(g.token.leaseId);
    }
  };
  await Promise.all(Array.from({ length: 100 }, worker));
})();
let steadyFrom: number | undefined;
let before: { server: ReturnType<typeof readProcess>; etcd: ReturnType<typeof readProcess> } | undefined;
let peakRss = 0;
void acquiring.then(() => {
  console.log(`acquired ${ids.length} leases in ${((Date.now() - acquireStart) / 1000).toFixed(1)} s`);
  steadyFrom = Date.now();
  longestGap = 0;
  before = { server: readProcess(server.process.pid!), etcd: readProcess(etcd.process.pid!) };
});

// Every lease every TTL/3, one id a message, spread over ticks of 50 ms; heeding the stream's backpressure.
const periodMs = (TTL * 1000) / 3;
let next = 0;
let sent = 0;
const started = Date.now();
for (let tick = 0; (steadyFrom === undefined || Date.now() - steadyFrom < SECONDS * 1000) && !cut; tick++) {
  const n = Math.round((ids.length * TICK_MS) / periodMs);
  for (let i = 0; i < n && ids.length > 0; i++) {
    if (!stream.write({ leaseId: ids[next++ % ids.length] })) await new Promise((r) => stream.once("drain", r));
    sent++;
  }
  if (tick % 20 === 0) peakRss = Math.max(peakRss, readProcess(server.process.pid!)?.rssMb ?? 0);
  await sleep(Math.max(0, started + (tick + 1) * TICK_MS - Date.now()));
}
const after = { server: readProcess(server.process.pid!), etcd: readProcess(etcd.process.pid!) };
const steady = (Date.now() - steadyFrom!) / 1000;
stream.end();
await sleep(1000);

// Lost: a lease that etcd no longer has, asked once more for each at the end.
let lost = 0;
const check = client.KeepAlive();
const done = new Promise<void>((resolve) => check.on("end", resolve).on("error", resolve));
check.on("data", (a: { renewals: { error?: unknown }[] }) => (lost += a.renewals.filter((r) => r.error).length));
for (let i = 0; i < ids.length; i += 10_000) check.write({ leaseIds: ids.slice(i, i + 10_000) });
check.end();
await done;

const core = (a?: { cpuSeconds: number }, b?: { cpuSeconds: number }) => (a && b ? ((b.cpuSeconds - a.cpuSeconds) / steady).toFixed(3) : "?");
const perMsgUs = before?.server && after.server ? ((after.server.cpuSeconds - before.server.cpuSeconds) / ((LEASES * steady * 1000) / periodMs)) * 1e6 : NaN;
console.log(
  [
    `leases ${ids.length}, TTL ${TTL} s, one id a message every ${(periodMs / 1000).toFixed(2)} s (${Math.round((LEASES * 1000) / periodMs)} messages/s), steady for ${steady.toFixed(0)} s`,
    `stream cut: ${cut ?? "no"}; messages sent ${sent}, answered ${answers}; renewals failed ${errors}${firstError ? ` (first: ${firstError})` : ""}`,
    `leases lost (gone at the end): ${lost}; longest time a lease went unrenewed in the steady part: ${longestGap} ms`,
    `server CPU ${core(before?.server, after.server)} of a core (${perMsgUs.toFixed(0)} µs a message), peak RSS ${peakRss.toFixed(0)} MB; etcd CPU ${core(before?.etcd, after.etcd)} of a core`,
  ].join("\n"),
);
client.close();
await server.stop();
await etcd.stop();
rmSync(etcdDir, { recursive: true, force: true });
process.exit(0);
