// A fuzz run: one etcd, two servers (one without authentication, one with JWTs and a policy), two
// principals holding leases on each, then `requests` generated cases sent concurrently, each answer
// checked (test/fuzz/findings.ts lists the invariants), and at the end the leak checks and a read of
// etcd itself. The short run in `npm test` (test/fuzz/fuzz.test.ts) and `scripts/fuzz.sh` both call
// runFuzz; the seed alone decides the cases.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Etcd3 } from "etcd3";
import { exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import {
  LeaseService,
  type AcquireResponse,
  type CloseSessionRequest,
  type KeepAliveRequest,
  type KeepAliveResponse,
  type OpenSessionResponse,
  type ReleaseRequest,
  type RenewRequest,
} from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { BatchRequest, BatchResponse, DeleteRequest, PutRequest, PutResponse, TxnRequest } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { etcdWatchers } from "../harness/wire.js";
import { Connections, decodeAnswer, decodeRequest, encode, send, type Answer, type Encoded } from "./engine.js";
import { CODE_NAMES, Findings } from "./findings.js";
import { batchOf, designatedHolder, duration, METHODS, MODEL_RESOURCES, PRINCIPALS, resourceName, type FuzzCase, type Principal } from "./generators.js";
import { materialize } from "./materialize.js";
import { ServerModel, type WriteRec } from "./model.js";

export interface RunOptions {
  requests: number;
  seed: number;
  /** Calls in flight at once. */
  concurrency?: number;
  /** Progress lines go here. */
  log?: (line: string) => void;
  /** Only these case numbers are sent (the others are generated and skipped): to replay a failure. */
  only?: Set<number>;
  /** Print every breach as it happens, not only the first of each invariant. */
  verbose?: boolean;
  /** Stops sending cases; the run then ends as usual (checks, then servers and etcd stopped). */
  signal?: AbortSignal;
}

export interface RunResult {
  seed: number;
  findings: Findings;
  ms: number;
}

const BATCH = 500;
const ISSUER = "https://issuer.fuzz";
const AUDIENCE = "fencekeeper";
const OK = 0;
const RETRYABLE = new Set([Code.Unavailable, Code.Aborted]);
const OUTCOME_OPEN = new Set([Code.DeadlineExceeded, Code.Canceled, Code.Unavailable, Code.Unknown, Code.Internal]);
const PROTECTED = /^\/fencekeeper\.v1\./;

/** The world's own calls never wait long: a stuck server shows up in the fuzz calls' checks, not as a hang here. */
const WORLD_CALL = { timeoutMs: 10_000 };
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One server under test, with its model and the fuzzer's connections to it. */
interface Target {
  server: TestServer;
  prefix: string;
  auth: boolean;
  model: ServerModel;
  connections: Connections;
  /** The principals' own clients, for the leases the model keeps held. */
  world: Record<Principal, Client<typeof LeaseService>>;
  baseline: { fds: number; rssMb: number };
  peakRssMb: number;
  /** The server's Prometheus endpoint. */
  metricsUrl: string;
  /** What the fuzzer saw of this server, per method path: INTERNAL answers, and calls that ended without any status. */
  seen: Map<string, { internal: number; noStatus: number }>;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}
const fdCount = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** Sockets of the server's port in CLOSE_WAIT (the client closed, the server never did), by the client's port. */
function closeWaitFrom(port: number): number[] {
  const from: number[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 4) continue;
      const local = parseInt(f[1].split(":")[1], 16);
      if (local === port && f[3] === "08") from.push(parseInt(f[2].split(":")[1], 16));
    }
  }
  return from;
}

const bearer =
  (token: string | undefined): Interceptor =>
  (next) =>
  async (req) => {
    if (token) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };

/** A JSON view of a case or message for a report: bigints and bytes readable. */
export function show(x: unknown): string {
  return JSON.stringify(x, (_, v) =>
    typeof v === "bigint" ? `${v}n` : v instanceof Uint8Array || (v && v.type === "Buffer") ? `hex:${Buffer.from(v instanceof Uint8Array ? v : v.data).toString("hex").slice(0, 80)}` : v,
  );
}

function outcomeOf(a: Answer): string {
  if (a.unanswered) return "unanswered";
  if (a.code !== undefined) return CODE_NAMES[a.code] ?? `code ${a.code}`;
  if (a.cancelled) return "cancelled";
  if (a.reset !== undefined) return `reset ${a.reset}`;
  if (a.httpStatus !== undefined) return `HTTP ${a.httpStatus}`;
  if (a.connectionFailed) return "connection failed";
  return "no status";
}

export async function runFuzz(o: RunOptions): Promise<RunResult> {
  const log = o.log ?? (() => undefined);
  const concurrency = o.concurrency ?? 48;
  const started = Date.now();
  const findings = new Findings();
  if (o.verbose) findings.onBreach = (inv, example) => log(`BREACH ${inv}: ${example}`);
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-fuzz-"));
  let etcd: TestEtcd | undefined;
  const targets: Target[] = [];
  let stopWorld = false;
  let worldLoop: Promise<void> | undefined;
  try {
    // Keys and a policy: alice and bob may acquire, write, read and observe everything, and administer nothing.
    const pair = await generateKeyPair("ES256");
    const stranger = await generateKeyPair("ES256");
    writeFileSync(join(dir, "jwt.pem"), await exportSPKI(pair.publicKey));
    writeFileSync(
      join(dir, "policy.json"),
      JSON.stringify({ version: 1, rules: [{ principals: [...PRINCIPALS], verbs: ["acquire", "write", "read", "observe"], resources: ["*"] }] }),
    );
    const jwt = (sub: string, key: CryptoKey) =>
      new SignJWT({ groups: [] }).setProtectedHeader({ alg: "ES256" }).setSubject(sub).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime("24h").sign(key);
    const credentials: Record<FuzzCase["caller"], string | undefined> = {
      alice: await jwt("alice", pair.privateKey),
      bob: await jwt("bob", pair.privateKey),
      anonymous: undefined,
      forged: await jwt("alice", stranger.privateKey),
    };

    log("fuzz: starting etcd and the servers");
    etcd = await startEtcd();
    // A request's whole body may take longer than the default 10 s to arrive under load (engine.ts,
    // Stall): the servers wait for it, and the answer bound waits while it moves. The read limit itself is
    // tested in test/integration/wire-abuse.test.ts.
    const quiet = ["--log-level", "info", "--request-read-timeout", "60000"];
    const authArgs = ["--jwt-keys", join(dir, "jwt.pem"), "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--policy", join(dir, "policy.json")];
    for (const [i, auth] of [false, true].entries()) {
      const prefix = `/fuzz-${i}/`;
      const server = await startServer({ etcd: etcd.endpoint, prefix, args: [...quiet, ...(auth ? authArgs : [])] });
      const world = Object.fromEntries(
        PRINCIPALS.map((p) => [p, createClient(LeaseService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer(auth ? credentials[p] : undefined)] }))]),
      ) as Record<Principal, Client<typeof LeaseService>>;
      const metricsUrl = server.logs.map((l) => /"msg":"metrics"/.test(l) && (JSON.parse(l).url as string)).find(Boolean) || "";
      targets.push({
        server,
        prefix,
        auth,
        model: new ServerModel(auth),
        connections: new Connections(server.url),
        world,
        baseline: { fds: 0, rssMb: 0 },
        peakRssMb: 0,
        metricsUrl,
        seen: new Map(),
      });
    }
    let serverExited: string | undefined;
    for (const t of targets) t.server.process.once("exit", (code, signal) => (serverExited ??= `server ${t.auth ? "with" : "without"} authentication exited (${code ?? signal})`));

    // The world: each principal holds its resources and a session, on each server.
    log("fuzz: acquiring the principals' leases");
    for (const t of targets) await maintain(t, 0);
    await sleep(500);
    const watchersAtStart = await etcdWatchers(etcd.endpoint);
    for (const t of targets) {
      const pid = t.server.process.pid!;
      t.baseline = { fds: fdCount(pid), rssMb: rssMb(pid) };
      t.peakRssMb = t.baseline.rssMb;
    }
    log(`fuzz: seed ${o.seed}, ${o.requests} requests, ${concurrency} in flight; servers ${targets.map((t) => t.server.url).join(", ")}`);

    // Keeps the world's leases held, retires one of them now and then (so that there are old generations
    // to send), samples memory, and keeps the servers' log buffers short.
    worldLoop = (async () => {
      for (let tick = 1; !stopWorld; tick++) {
        await sleep(1000);
        for (const t of targets) {
          if (stopWorld) break;
          await maintain(t, tick).catch(() => undefined);
          t.peakRssMb = Math.max(t.peakRssMb, rssMb(t.server.process.pid!));
          if (t.server.logs.length > 2000) t.server.logs.splice(0, t.server.logs.length - 500);
        }
      }
    })();

    // The cases, in order, concurrency at a time.
    let next = 0;
    let batch: FuzzCase[] = [];
    let batchNo = -1;
    let lastReport = Date.now();
    const worker = async () => {
      while (next < o.requests && serverExited === undefined && !o.signal?.aborted) {
        const serial = next++;
        const b = Math.floor(serial / BATCH);
        if (b !== batchNo) {
          batch = batchOf(o.seed, b, BATCH);
          batchNo = b;
        }
        const c = batch[serial % BATCH];
        if (o.only && !o.only.has(serial)) continue;
        await runCase(targets[c.server], c, serial, credentials[c.caller], findings);
        if (Date.now() - lastReport > 10_000) {
          lastReport = Date.now();
          log(`fuzz: ${findings.requests} calls, ${Math.round((findings.requests * 1000) / (Date.now() - started))}/s, ${findings.broken.length} invariants broken`);
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    findings.check("alive", serverExited === undefined, () => serverExited!);
    log("fuzz: calls done; stopping the world's upkeep");
    stopWorld = true;
    await worldLoop;
    findings.figures["calls per second"] = Math.round((findings.requests * 1000) / (Date.now() - started));
    const sorted = [...findings.latencies].sort((x, y) => x - y);
    const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
    findings.figures["answer time ms p50/p90/p99 (calls with a status)"] = `${q(0.5)}/${q(0.9)}/${q(0.99)}`;

    // No leak: with every fuzz connection closed, the servers come back to where they started.
    log("fuzz: closing every fuzz connection, then the leak checks");
    for (const t of targets) await t.connections.close();
    await settle(async () => (await etcdWatchers(etcd!.endpoint)) <= watchersAtStart, 30_000);
    const watchersAtEnd = await etcdWatchers(etcd.endpoint);
    findings.check("watchers", watchersAtEnd <= watchersAtStart, () => `etcd has ${watchersAtEnd} watchers, ${watchersAtStart} at the start`);
    findings.figures["etcd watchers start/end"] = `${watchersAtStart}/${watchersAtEnd}`;
    for (const t of targets) {
      if (t.server.process.exitCode !== null || t.server.process.signalCode !== null) continue;
      const pid = t.server.process.pid!;
      const port = Number(new URL(t.server.url).port);
      const name = t.auth ? "with auth" : "without auth";
      await settle(() => fdCount(pid) <= t.baseline.fds + 2 && closeWaitFrom(port).length === 0, 30_000);
      const fds = fdCount(pid);
      const closeWaitPorts = closeWaitFrom(port);
      const closeWait = closeWaitPorts.length;
      const whose = (p: number) => {
        const cases = t.connections.carriedBy(p);
        return cases.length ? `the connection from port ${p}, which last carried cases #${cases.join(", #")}` : `the connection from port ${p} (not one of the fuzz calls')`;
      };
      const rss = rssMb(pid);
      findings.check("fds", fds <= t.baseline.fds + 2, () => `server ${name}: ${fds} fds open, ${t.baseline.fds} at the start`);
      findings.check("closeWait", closeWait === 0, () => `server ${name}: ${closeWait} sockets in CLOSE_WAIT after every client closed: ${closeWaitPorts.map(whose).join("; ")} (FUZZ_ONLY=<cases> runs them again)`);
      // Bounded: a run may warm caches, not grow without end.
      const limit = Math.max(2 * t.baseline.rssMb, t.baseline.rssMb + 256);
      findings.check("rss", t.peakRssMb <= limit, () => `server ${name}: RSS peaked at ${t.peakRssMb.toFixed(0)} MiB (start ${t.baseline.rssMb.toFixed(0)} MiB, bound ${limit.toFixed(0)} MiB)`);
      // The server's own view: a cancel or a bad input counted as INTERNAL would page someone at night.
      const metrics = await serverMetrics(t.metricsUrl);
      let counted = 0;
      for (const [path, seen] of t.seen) {
        const [, service, method] = path.split("/");
        const internal = metrics.sum("grpc_server_handled_total", `grpc_service="${service}",grpc_method="${method}",grpc_code="Internal"`);
        counted += internal;
        findings.check(
          "metrics",
          internal <= seen.internal + seen.noStatus,
          () => `server ${name}: its metrics count ${internal} calls of ${path} ended INTERNAL; the fuzzer saw ${seen.internal} INTERNAL answers and ${seen.noStatus} calls without a status`,
        );
      }
      const open = metrics.sum("fencekeeper_streams_open");
      findings.check("metrics", open === 0, () => `server ${name}: fencekeeper_streams_open is ${open} with every client gone`);
      findings.figures[`server ${name}: INTERNAL counted by the server; streams open at the end`] = `${counted}; ${open}`;
      findings.figures[`server ${name}: fds start/end, CLOSE_WAIT, RSS MiB start/peak/end`] =
        `${t.baseline.fds}/${fds}, ${closeWait}, ${t.baseline.rssMb.toFixed(0)}/${t.peakRssMb.toFixed(0)}/${rss.toFixed(0)}`;
    }

    // etcd itself: nothing a refused call wrote, no fence beyond what was issued.
    log("fuzz: reading etcd");
    const client = new Etcd3({ hosts: etcd.endpoint });
    try {
      for (const t of targets) await checkEtcd(client, t, findings);
    } finally {
      client.close();
    }
    return { seed: o.seed, findings, ms: Date.now() - started };
  } finally {
    log("fuzz: stopping the servers and etcd");
    stopWorld = true;
    await worldLoop?.catch(() => undefined);
    for (const t of targets) {
      await t.connections.close().catch(() => undefined);
      await t.server.stop();
    }
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The sums of a server's Prometheus series (its /metrics URL), by name and an optional label filter. */
async function serverMetrics(url: string): Promise<{ sum(name: string, label?: string): number }> {
  const text = url ? await (await fetch(url)).text() : "";
  return {
    sum(name, label) {
      let total = 0;
      for (const line of text.split("\n")) {
        if (!line.startsWith(name) || (line[name.length] !== "{" && line[name.length] !== " ")) continue;
        if (label && !line.includes(label)) continue;
        total += Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
      }
      return total;
    },
  };
}

async function settle(check: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !(await check())) await sleep(250);
}

/** Holds each principal's resources and one session; every third tick, one lease is given up and taken again. */
async function maintain(t: Target, tick: number): Promise<void> {
  const m = t.model;
  for (const p of PRINCIPALS) {
    const lease = t.world[p];
    for (let i = 0; i < MODEL_RESOURCES; i++) {
      if (designatedHolder(i) !== p) continue;
      const resource = resourceName(i);
      const cur = m.current.get(resource);
      if (cur && cur.principal === p) {
        const churn = tick > 0 && tick % 3 === 0 && i % 3 === Math.floor(tick / 3) % 3;
        try {
          if (churn) {
            await lease.release({ token: cur.token }, WORLD_CALL);
            m.released(cur.token);
          } else {
            await lease.renew({ leaseId: cur.token.leaseId }, WORLD_CALL);
            continue;
          }
        } catch (err) {
          if (ConnectError.from(err).code !== Code.NotFound) continue;
          m.released(cur.token);
        }
      }
      if (m.current.has(resource)) continue;
      try {
        const r = await lease.acquire({ resource, ttl: ttl(60), holder: `world-${p}` }, WORLD_CALL);
        m.issue(r.token!, p);
      } catch {
        // held by a fuzz acquisition the model did not see through (a cancelled call): it expires
      }
    }
    const sessions = m.sessions.get(p)!;
    const live = sessions.filter((id) => !m.dead.has(id));
    for (const id of live.slice(-2)) {
      try {
        await lease.renew({ leaseId: id }, WORLD_CALL);
      } catch {
        m.closedSession(id);
      }
    }
    if (live.length === 0) {
      const s = await lease.openSession({ ttl: ttl(60), holder: `world-${p}` }, WORLD_CALL);
      m.openSession(s.sessionId, p);
    }
  }
}

/** The principal a caller stands for: on the server without authentication every caller is one of the two. */
function principalOf(c: FuzzCase): Principal | undefined {
  if (c.caller === "alice" || c.caller === "bob") return c.caller;
  if (c.server === 0) return c.caller === "anonymous" ? "alice" : "bob";
  return undefined;
}

const TAG = /^fz(\d+)\.(\d+):/;

/** A write (its value tags) and why it would be forbidden; index: its place in a Batch, whose results answer each. */
interface WriteCheck {
  resource: string;
  generation: bigint;
  forbidden?: string;
  tags: string[];
  replayable: boolean;
  token: FencingToken;
  index?: number;
}

/** What the model says about a call before it is sent. */
interface Before {
  /** The writes of a Put, Delete or Txn (one), or of a Batch (each of its writes). */
  writes?: WriteCheck[];
  /** Lease ids used (Renew, KeepAlive, CloseSession), with why each success would be forbidden. */
  leases?: Map<bigint, string | undefined>;
  release?: { token: FencingToken; forbidden?: string };
  request?: unknown;
}

async function runCase(t: Target, c: FuzzCase, serial: number, authorization: string | undefined, f: Findings): Promise<void> {
  const m = t.model;
  const who = principalOf(c);
  let encoded: Encoded;
  try {
    encoded = encode(
      c,
      c.messages.map((x) => materialize(x, m, serial)),
      serial,
    );
  } catch (err) {
    // A template that protobuf-es itself refuses to encode (e.g. a Duration out of its range): not sent.
    f.outcome(c.method, c.wire, "not encodable");
    return;
  }
  const before = expectations(t, c, serial, encoded, who);
  f.requests++;
  if (METHODS[c.method].kind === "bidi") f.streamMessages += encoded.bodies.length;
  const a = await send({ c, encoded, authorization: authorization ? `Bearer ${authorization}` : undefined, connections: t.connections, serial });
  f.outcome(c.method, c.wire, outcomeOf(a));
  const path = METHODS[c.method].path;
  if (!t.seen.has(path)) t.seen.set(path, { internal: 0, noStatus: 0 });
  if (a.code === Code.Internal) t.seen.get(path)!.internal++;
  if (a.code === undefined && !a.cancelled) t.seen.get(path)!.noStatus++;
  if (a.code !== undefined && f.latencies.length < 200_000) f.latencies.push(a.ms);
  const example = (what: string) => () =>
    `${what}\n  case #${serial} (batch ${Math.floor(serial / BATCH)}, index ${serial % BATCH}) to the server ${t.auth ? "with" : "without"} authentication: ${show({ ...c, messages: undefined })}\n  request: ${show(before.request ?? c.messages)}\n  first body (hex): ${encoded.bodies[0]?.toString("hex").slice(0, 160) ?? "none"}\n  answer: ${show({ ...a, messages: a.messages.length })}`;

  f.check("answered", !a.unanswered, example("no answer within the bound"));
  // REFUSED_STREAM (7) says the stream was never processed (RFC 9113, 8.7): a clean refusal, not a lost answer.
  const refused = a.reset === http2.constants.NGHTTP2_REFUSED_STREAM;
  f.check("status", a.code !== undefined || a.cancelled || a.unanswered || refused, example(`no status: ${a.connectionFailed ?? outcomeOf(a)}`));
  f.check("wellFormed", a.malformed === undefined, example(`malformed status: ${a.malformed}`));
  if (a.code !== undefined) {
    f.check("notInternal", a.code !== Code.Internal && a.code !== Code.Unknown, example(`answered ${CODE_NAMES[a.code]}: ${a.message}`));
    // A broken JSON text counts only if it is sent (not with the frame mutation that sends no frame) as
    // it was broken (a byte mutation on top may mend it: a0 ^ a5 = 0d, whitespace).
    if (c.hopeless || (encoded.jsonBroken && c.frame !== "empty-body" && c.bytes === undefined)) {
      const retryable = RETRYABLE.has(a.code) || (a.code === Code.DeadlineExceeded && c.timeoutMs === undefined) || (a.code === Code.Canceled && !a.cancelled);
      f.check("hopeless", a.code !== OK && !retryable, example(`input that can never succeed answered ${CODE_NAMES[a.code]}`));
    }
    if (t.auth && who === undefined && PROTECTED.test(METHODS[c.method].path)) {
      f.check("authenticated", a.code !== OK, example("a caller without valid credentials was served"));
    }
  }
  after(t, c, a, before, who, f, example);
}

/** Decodes what is about to be sent and asks the model what it allows. */
function expectations(t: Target, c: FuzzCase, serial: number, encoded: Encoded, who: Principal | undefined): Before {
  const m = t.model;
  const out: Before = {};
  if (c.method === "KeepAlive") {
    out.leases = new Map();
    for (const body of encoded.bodies) {
      const r = decodeRequest<KeepAliveRequest>(c, body);
      if (!r) continue;
      for (const id of [r.leaseId, ...r.leaseIds]) out.leases.set(id, m.forbiddenLeaseUse(id, who));
    }
    return out;
  }
  const req = decodeRequest<Record<string, unknown>>(c, encoded.bodies[0]);
  out.request = req;
  if (!req) return out;
  const tagOf = (v: Uint8Array) => TAG.exec(Buffer.from(v.subarray(0, 24)).toString("latin1"))?.[0];
  const expectWrite = (method: string, w: PutRequest | DeleteRequest | TxnRequest, values: Uint8Array[], index?: number) => {
    const token = w.mutation?.token;
    const tags = values.map(tagOf).filter((t): t is string => t !== undefined);
    const forbidden = token ? m.forbiddenWrite(token, w.resource, w.mutation?.mode ?? 0, who) : "no token";
    if (token) (out.writes ??= []).push({ resource: w.resource, generation: token.generation, forbidden, tags, replayable: (w.mutation?.idempotencyKey ?? "") !== "", token, index });
    // Until its answer says otherwise, a write's outcome is unknown; a refused or unanswered one must never show up in etcd.
    for (const tag of tags) m.writes.set(tag, { serial, method, resource: w.resource, key: "", outcome: "pending", forbidden, generation: token?.generation ?? 0n });
  };
  if (c.method === "Put") expectWrite(c.method, req as unknown as PutRequest, [(req as unknown as PutRequest).value]);
  if (c.method === "Delete") expectWrite(c.method, req as unknown as DeleteRequest, []);
  if (c.method === "Txn") {
    const t = req as unknown as TxnRequest;
    expectWrite(c.method, t, t.ops.flatMap((op) => (op.op.case === "put" ? [op.op.value.value] : [])));
  }
  if (c.method === "Batch") {
    (req as unknown as BatchRequest).writes.forEach((b, i) => {
      if (b.write.case === "put") expectWrite("Batch Put", b.write.value, [b.write.value.value], i);
      if (b.write.case === "delete") expectWrite("Batch Delete", b.write.value, [], i);
    });
  }
  if (c.method === "Renew") {
    const id = (req as unknown as RenewRequest).leaseId;
    out.leases = new Map([[id, m.forbiddenLeaseUse(id, who)]]);
  }
  if (c.method === "CloseSession") {
    const id = (req as unknown as CloseSessionRequest).sessionId;
    out.leases = new Map([[id, m.forbiddenLeaseUse(id, who)]]);
  }
  if (c.method === "Release") {
    const token = (req as unknown as ReleaseRequest).token;
    if (token) out.release = { token, forbidden: m.forbiddenRelease(token, who) };
  }
  return out;
}

/** Checks a call's answer against what the model allowed, then tells the model what happened. */
function after(t: Target, c: FuzzCase, a: Answer, before: Before, who: Principal | undefined, f: Findings, example: (what: string) => () => string): void {
  const m = t.model;
  const ok = a.code === OK;
  // A Batch's writes are each answered in its results; any other write by the call's status.
  const batch = ok && c.method === "Batch" ? decodeAnswer<BatchResponse>(c.method, a, a.messages[0] ?? Buffer.alloc(0)) : undefined;
  for (const w of before.writes ?? []) {
    // A deadline that passed, a cancel, or an unavailable etcd leave the outcome open: the write may have committed.
    let code = a.code;
    let commit = ok && w.index === undefined ? decodeAnswer<PutResponse>(c.method, a, a.messages[0] ?? Buffer.alloc(0))?.commit : undefined;
    if (w.index !== undefined && ok) {
      const r = batch?.results[w.index]?.result;
      commit = r?.case === "commit" ? r.value : undefined;
      code = r?.case === "error" ? r.value.code : r?.case === "commit" ? OK : undefined;
    }
    const open = code === undefined || OUTCOME_OPEN.has(code);
    const outcome: WriteRec["outcome"] = code === OK ? "ok" : open ? "unknown" : "refused";
    for (const tag of w.tags) {
      const rec = m.writes.get(tag)!;
      rec.code = code;
      // Allowed and accepted writes need no record: a value found without one is theirs.
      if (outcome === "ok" && !rec.forbidden) m.writes.delete(tag);
      else rec.outcome = outcome;
    }
    if (code === OK) {
      const replayed = commit?.replayed === true;
      if (!replayed) {
        f.check("writes", w.forbidden === undefined, example(`a write the rules forbid was accepted: ${w.forbidden}`));
        m.accepted(w.resource, w.generation);
      } else {
        f.check("writes", w.replayable, example("a write without an idempotency key was answered as a replay"));
      }
    }
  }
  if (before.leases && a.code !== undefined) {
    if (c.method === "KeepAlive") {
      for (const data of a.messages) {
        const r = decodeAnswer<KeepAliveResponse>(c.method, a, data);
        if (!r) continue;
        const renewed = r.renewals.length ? r.renewals.filter((x) => !x.error && x.ttl).map((x) => x.leaseId) : !r.error && r.ttl ? [r.leaseId] : [];
        for (const id of renewed) {
          const why = before.leases.get(id);
          f.check("leases", why === undefined, example(`KeepAlive renewed lease ${id}: ${why}`));
        }
      }
    } else {
      for (const [id, why] of before.leases) {
        if (ok) f.check("leases", why === undefined, example(`${c.method} of lease ${id} succeeded: ${why}`));
        if (ok && c.method === "CloseSession") m.closedSession(id);
      }
    }
  }
  if (before.release && ok) {
    f.check("leases", before.release.forbidden === undefined, example(`Release succeeded: ${before.release.forbidden}`));
    m.released(before.release.token);
  }
  if (ok && c.method === "Acquire" && who !== undefined) {
    const r = decodeAnswer<AcquireResponse>(c.method, a, a.messages[0] ?? Buffer.alloc(0));
    const asked = (before.request as { resource?: string } | undefined)?.resource;
    if (r?.token) {
      const tok = r.token;
      f.check("issued", (!t.auth || tok.principal === who) && (asked === undefined || tok.resource === asked), example(`Acquire by ${who} of "${asked}" handed out ${show(tok)}`));
      m.issue(tok, who);
    }
  }
  if (ok && c.method === "OpenSession" && who !== undefined) {
    const r = decodeAnswer<OpenSessionResponse>(c.method, a, a.messages[0] ?? Buffer.alloc(0));
    if (r && r.sessionId > 0n) m.openSession(r.sessionId, who);
  }
}

/** Reads the server's state in etcd: every value must come from a call that was not refused; no fence beyond an issued generation. */
async function checkEtcd(client: Etcd3, t: Target, f: Findings): Promise<void> {
  const kvs = await client.getAll().prefix(`${t.prefix}r/`).exec();
  const issued = new Map<string, bigint>();
  const fences = new Map<string, bigint>();
  let values = 0;
  let unattributed = 0;
  const name = t.auth ? "with auth" : "without auth";
  for (const kv of kvs.kvs) {
    const key = kv.key.toString("utf8");
    const rest = key.slice(`${t.prefix}r/`.length);
    const slash = rest.indexOf("/");
    const resource = decodeURIComponent(rest.slice(0, slash));
    const what = rest.slice(slash + 1);
    if (what === "issued") issued.set(resource, BigInt(kv.mod_revision));
    else if (what === "fence") fences.set(resource, BigInt(kv.value.toString()));
    else if (what.startsWith("d/")) {
      values++;
      const tag = TAG.exec(kv.value.subarray(0, 24).toString("latin1"))?.[0];
      if (!tag) {
        unattributed++;
        continue;
      }
      const rec = t.model.writes.get(tag);
      const bad = rec && (rec.outcome === "refused" || rec.forbidden !== undefined);
      f.check("etcd", !bad, () => `server ${name}: etcd holds ${key} = ${tag}..., written by case #${rec!.serial}, a ${rec!.method} that was ${rec!.outcome} (${CODE_NAMES[rec!.code ?? -1] ?? "no status"})${rec!.forbidden ? ` and forbidden (${rec!.forbidden})` : ""}`);
    }
  }
  for (const [resource, fence] of fences) {
    const last = issued.get(resource) ?? 0n;
    f.check("etcd", fence <= last, () => `server ${name}: the fence of "${resource}" is ${fence}, beyond the last generation issued (${last})`);
    const accepted = t.model.fence.get(resource) ?? 0n;
    f.check("etcd", fence >= accepted, () => `server ${name}: the fence of "${resource}" is ${fence}, below generation ${accepted} that was accepted`);
  }
  f.figures[`server ${name}: store values in etcd (unattributed)`] = `${values} (${unattributed})`;
}

export { duration };
