// Attacks on the wire that need no credentials: decompression bombs, and requests whose bodies never end
// or trickle in. Each is refused quickly with a specific status, and the server stays responsive to
// everyone else while it happens.
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import { constants, createBrotliCompress, gzipSync } from "node:zlib";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { exportSPKI, generateKeyPair } from "jose";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, useServer } from "../harness/suite.js";
import { connectUnary, grpcWeb } from "../harness/wire.js";
import { scrape } from "../operations/support/metrics.js";

const HEALTH = "/grpc.health.v1.Health/Check";

interface Answer {
  /** grpc-status, or undefined when the stream was reset or never answered. */
  status?: number;
  message: string;
  /** The RST_STREAM code, when the stream was reset without a status. */
  reset?: number;
  timedOut?: boolean;
  ms: number;
}

interface Call {
  path: string;
  headers?: Record<string, string>;
  /** Written one after another; a chunk that is a number is a pause of that many ms. */
  chunks: (Buffer | number)[];
  /** Half-close after the last chunk (default true). */
  end?: boolean;
  timeoutMs?: number;
  session?: http2.ClientHttp2Session;
}

/** One call over raw HTTP/2, as an attacker would send it. */
function h2call(url: string, c: Call): Promise<Answer> {
  const started = Date.now();
  const session = c.session ?? http2.connect(url).on("error", () => undefined);
  return new Promise((resolve) => {
    const fields = new Map<string, string>();
    let settled = false;
    const done = (extra: Partial<Answer>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!c.session) session.destroy();
      const status = fields.get("grpc-status");
      resolve({ status: status === undefined ? undefined : Number(status), message: decodeURIComponent(fields.get("grpc-message") ?? ""), ms: Date.now() - started, ...extra });
    };
    const timer = setTimeout(() => {
      req.close(http2.constants.NGHTTP2_CANCEL);
      done({ timedOut: true });
    }, c.timeoutMs ?? 10_000);
    const req = session.request({ ":method": "POST", ":path": c.path, "content-type": "application/grpc", te: "trailers", ...c.headers });
    const take = (h: http2.IncomingHttpHeaders) => {
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") fields.set(k, v);
    };
    req.on("response", (h) => {
      take(h);
      if (h["grpc-status"] !== undefined) done({});
    });
    req.on("trailers", (h) => {
      take(h);
      done({});
    });
    req.on("error", () => undefined);
    req.resume();
    req.on("close", () => done(fields.has("grpc-status") ? {} : { reset: req.rstCode }));
    void (async () => {
      for (const chunk of c.chunks) {
        if (typeof chunk === "number") await new Promise((r) => setTimeout(r, chunk));
        else if (!req.closed && !req.destroyed) req.write(chunk);
      }
      if (c.end !== false && !req.closed && !req.destroyed) req.end();
    })();
  });
}

const frame = (payload: Buffer, flags = 0) => {
  const f = Buffer.alloc(5 + payload.length);
  f[0] = flags;
  f.writeUInt32BE(payload.length, 1);
  payload.copy(f, 5);
  return f;
};

/** 1 GiB of zeros in about 1 MiB: gzip members, one after another, make one valid gzip stream. */
function gzipBomb(): Buffer {
  const member = gzipSync(Buffer.alloc(16 << 20), { level: 9 });
  return Buffer.concat(Array.from({ length: 64 }, () => member));
}

/** 256 MiB of zeros in brotli, compressed as it streams. */
async function brotliBomb(): Promise<Buffer> {
  const c = createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 5 } });
  const out: Buffer[] = [];
  c.on("data", (d: Buffer) => out.push(d));
  const ended = new Promise((r) => c.once("end", r));
  const zeros = Buffer.alloc(16 << 20);
  for (let i = 0; i < 16; i++) if (!c.write(zeros)) await new Promise((r) => c.once("drain", r));
  c.end();
  await ended;
  return Buffer.concat(out);
}

/** The server process's peak resident memory, in MiB. */
function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m![1]) / 1024;
}

describe("wire abuse: decompression bombs before authentication", function () {
  this.timeout(60_000);
  const s = useServer();

  for (const [name, encoding, make] of [
    ["a 1 MiB gzip body that inflates to 1 GiB", "gzip", async () => gzipBomb()],
    ["a brotli body of a few hundred bytes that inflates to 256 MiB", "br", brotliBomb],
  ] as const) {
    it(`${name}, to Health/Check, is RESOURCE_EXHAUSTED at once, and the server answers others meanwhile`, async () => {
      const bomb = await make();
      const pid = s.server.process.pid!;
      const before = peakRssMiB(pid);
      const session = http2.connect(s.server.url);
      session.on("error", () => undefined);
      try {
        // Three at once, and a bystander's Check beside them.
        const bombs = [1, 2, 3].map(() => h2call(s.server.url, { path: HEALTH, headers: { "grpc-encoding": encoding }, chunks: [frame(bomb, 1)] }));
        await new Promise((r) => setTimeout(r, 20));
        const bystander = await h2call(s.server.url, { path: HEALTH, chunks: [frame(Buffer.alloc(0))], session, timeoutMs: 5000 });
        expect(bystander.status, bystander.message).to.equal(0);
        expect(bystander.ms, "the bystander's Check waited").to.be.below(1000);
        for (const a of await Promise.all(bombs)) {
          expect(a.status, a.message).to.equal(Code.ResourceExhausted);
          expect(a.message).to.match(/inflates to more than \d+ bytes/);
          expect(a.ms).to.be.below(2000);
        }
        expect(peakRssMiB(pid) - before, "the server's peak memory grew by (MiB)").to.be.below(100);
      } finally {
        session.destroy();
      }
    });
  }

  it("a small gzip message is still inflated and served", async () => {
    const a = await h2call(s.server.url, { path: HEALTH, headers: { "grpc-encoding": "gzip" }, chunks: [frame(gzipSync(Buffer.alloc(0)), 1)] });
    expect(a.status, a.message).to.equal(0);
  });
});

describe("wire abuse: requests that never finish arriving", function () {
  this.timeout(60_000);
  const LIMIT_MS = 2000;
  const HANDSHAKE_MS = 1500;
  const s = useServer(["--request-read-timeout", String(LIMIT_MS), "--handshake-timeout", String(HANDSHAKE_MS)]);
  const DESCRIBE = "/fencekeeper.v1.LeaseService/Describe";

  it("HTTP/2 streams whose bodies never end are reset at the read limit", async () => {
    const session = http2.connect(s.server.url);
    session.on("error", () => undefined);
    try {
      // Half a frame, and then nothing: the header announces 100 bytes, 10 come.
      const half = frame(Buffer.alloc(100)).subarray(0, 15);
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => h2call(s.server.url, { path: i % 2 ? HEALTH : DESCRIBE, chunks: [half], end: false, session, timeoutMs: LIMIT_MS + 5000 })),
      );
      for (const a of answers) {
        expect(a.timedOut, "still open").to.equal(undefined);
        expect(a.reset, `reset (status ${a.status}: ${a.message})`).to.equal(http2.constants.NGHTTP2_CANCEL);
        expect(a.ms).to.be.within(LIMIT_MS - 100, LIMIT_MS + 2500);
      }
    } finally {
      session.destroy();
    }
  });

  it("grpc-timeout counts from the call's arrival: a body still arriving when it passes is DEADLINE_EXCEEDED", async () => {
    const half = frame(Buffer.alloc(100)).subarray(0, 15);
    const a = await h2call(s.server.url, { path: DESCRIBE, headers: { "grpc-timeout": "300m" }, chunks: [half], end: false, timeoutMs: LIMIT_MS + 5000 });
    expect(a.status, a.message).to.equal(Code.DeadlineExceeded);
    expect(a.ms).to.be.below(LIMIT_MS);
  });

  it("an HTTP/1.1 body trickled a byte at a time is cut at the read limit", async () => {
    const { url } = s.server;
    const { hostname, port } = new URL(url);
    const started = Date.now();
    const socket = net.connect(Number(port), hostname);
    socket.on("error", () => undefined);
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.write(`POST ${HEALTH} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/proto\r\ncontent-length: 100\r\n\r\n`);
    let sent = 0;
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write(Buffer.from([0x0a]), () => sent++);
    }, 300);
    try {
      const outcome = await Promise.race([closed.then(() => "closed"), new Promise((r) => setTimeout(() => r("open"), LIMIT_MS + 6000))]);
      expect(outcome).to.equal("closed");
      expect(Date.now() - started).to.be.below(LIMIT_MS + 2500);
      expect(sent, "bytes trickled before the cut").to.be.below(15);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });

  it("HTTP/1.1: the headers of a second request on a kept-alive connection, trickled, are cut at the handshake timeout", async () => {
    const { hostname, port } = new URL(s.server.url);
    const socket = net.connect(Number(port), hostname);
    socket.on("error", () => undefined);
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    let answer = "";
    socket.on("data", (d: Buffer) => (answer += d.toString("latin1")));
    socket.write(`POST ${HEALTH} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/proto\r\ncontent-length: 0\r\n\r\n`);
    const deadline = Date.now() + 5000;
    while (!answer.includes("\r\n\r\n") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(answer).to.match(/^HTTP\/1.1 200/);
    const started = Date.now();
    const header = `POST ${HEALTH} HTTP/1.1\r\nhost: ${hostname}\r\nx-slow: ${"a".repeat(200)}`;
    let i = 0;
    const trickle = setInterval(() => {
      if (!socket.destroyed && i < header.length) socket.write(header[i++]);
    }, 100);
    try {
      const outcome = await Promise.race([closed.then(() => "closed"), new Promise((r) => setTimeout(() => r("open"), HANDSHAKE_MS + 8000))]);
      expect(outcome).to.equal("closed");
      expect(Date.now() - started).to.be.below(HANDSHAKE_MS + 3000);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });

  it("a KeepAlive stream, whose request is a stream of messages, outlives the read limit", async () => {
    const session = http2.connect(s.server.url);
    session.on("error", () => undefined);
    try {
      const req = session.request({ ":method": "POST", ":path": "/fencekeeper.v1.LeaseService/KeepAlive", "content-type": "application/grpc+json", te: "trailers" });
      req.on("error", () => undefined);
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      await new Promise((r) => setTimeout(r, LIMIT_MS + 500));
      expect(req.closed, `closed (RST_STREAM ${req.rstCode})`).to.equal(false);
      req.write(frame(Buffer.from('{"leaseId":"12345"}')));
      const deadline = Date.now() + 5000;
      while (Buffer.concat(chunks).length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(Buffer.concat(chunks).length, "an answer to the renewal").to.be.at.least(5);
      req.close();
    } finally {
      session.destroy();
    }
  });
});

/** Sends HTTP/1.1 request headers announcing a body of 100 bytes, then sends part of it and waits; resolves when the server closes. */
function h1Stall(url: string, path: string, contentType: string, timeoutMs: number): Promise<"closed" | "open"> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on("error", () => undefined);
  socket.write(`POST ${path} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: ${contentType}\r\ncontent-length: 100\r\n\r\n\x0a`);
  return Promise.race([
    new Promise<"closed">((resolve) => socket.once("close", () => resolve("closed"))),
    new Promise<"open">((resolve) => setTimeout(() => resolve("open"), timeoutMs)),
  ]).finally(() => socket.destroy());
}

for (const fastPath of ["on", "off"]) describe(`wire abuse: every refusal is logged and counted, on every protocol (--unary-fast-path ${fastPath})`, function () {
  this.timeout(120_000);
  const LIMIT_MS = 1500;
  let dir: string;
  let etcd: TestEtcd;
  let server: TestServer;

  before(async function () {
    this.timeout(60_000);
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-refusals-"));
    const pair = await generateKeyPair("ES256");
    writeFileSync(join(dir, "jwt.pem"), await exportSPKI(pair.publicKey));
    etcd = await startEtcd();
    server = await startServer({
      etcd: etcd.endpoint,
      args: ["--jwt-keys", join(dir, "jwt.pem"), "--jwt-issuer", "https://issuer.test", "--jwt-audience", "fencekeeper", "--request-read-timeout", String(LIMIT_MS), "--unary-fast-path", fastPath],
    });
  });
  after(async function () {
    this.timeout(30_000);
    await server?.stop();
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const DESCRIBE = "/fencekeeper.v1.LeaseService/Describe";
  const notProtobuf = Buffer.from([0x0e]);
  const oversized = Buffer.alloc(5 * 1024 * 1024, 0x0a);
  const half = frame(Buffer.alloc(100)).subarray(0, 15);

  /** Per protocol: each refusal, the code it is logged and counted with, and the call that provokes it. */
  const protocols: [string, [string, string, () => Promise<unknown>][]][] = [
    [
      "gRPC",
      [
        ["no credentials", "Unauthenticated", () => h2call(server.url, { path: DESCRIBE, chunks: [frame(Buffer.from([0x0a, 0x01, 0x78]))] })],
        ["a message that is not protobuf", "InvalidArgument", () => h2call(server.url, { path: HEALTH, chunks: [frame(notProtobuf)] })],
        ["a message over 4 MiB", "ResourceExhausted", () => h2call(server.url, { path: HEALTH, chunks: [frame(oversized)] })],
        ["a body that never ends", "DeadlineExceeded", () => h2call(server.url, { path: HEALTH, chunks: [half], end: false, timeoutMs: LIMIT_MS + 5000 })],
      ],
    ],
    [
      "gRPC-Web",
      [
        ["no credentials", "Unauthenticated", () => grpcWeb(server.url, DESCRIBE, Buffer.from([0x0a, 0x01, 0x78]))],
        ["a message that is not protobuf", "InvalidArgument", () => grpcWeb(server.url, HEALTH, notProtobuf)],
        ["a message over 4 MiB", "ResourceExhausted", () => grpcWeb(server.url, HEALTH, oversized)],
        ["a body that never ends", "DeadlineExceeded", () => h1Stall(server.url, HEALTH, "application/grpc-web+proto", LIMIT_MS + 5000)],
      ],
    ],
    [
      "Connect",
      [
        ["no credentials", "Unauthenticated", () => connectUnary(server.url, DESCRIBE, Buffer.from([0x0a, 0x01, 0x78]), { "content-type": "application/proto" })],
        ["a message that is not protobuf", "InvalidArgument", () => connectUnary(server.url, HEALTH, notProtobuf, { "content-type": "application/proto" })],
        ["a message over 4 MiB", "ResourceExhausted", () => connectUnary(server.url, HEALTH, oversized, { "content-type": "application/proto" })],
        ["a body that never ends", "DeadlineExceeded", () => h1Stall(server.url, HEALTH, "application/proto", LIMIT_MS + 5000)],
      ],
    ],
  ];

  for (const [protocol, refusals] of protocols) {
    it(`${protocol}: ${refusals.map(([name]) => name).join(", ")}`, async () => {
      for (const [name, code, send] of refusals) {
        const rpc = name === "no credentials" ? { service: "fencekeeper.v1.LeaseService", method: "Describe" } : { service: "grpc.health.v1.Health", method: "Check" };
        const labels = { grpc_service: rpc.service, grpc_method: rpc.method, grpc_code: code };
        const before = (await scrape(server)).value("grpc_server_handled_total", labels);
        const logged = () => server.logs.filter((l) => l.includes('"msg":"call"') && l.includes(`"rpc":"${rpc.service}/${rpc.method}"`) && l.includes(`"code":"${code}"`)).length;
        const linesBefore = logged();
        await send();
        await eventually(async () => (await scrape(server)).value("grpc_server_handled_total", labels) === before + 1, `${name}: one ${code} counted`, 5000);
        await eventually(() => logged() === linesBefore + 1, `${name}: one ${code} logged`, 5000);
      }
    });
  }
});
