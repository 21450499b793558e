// Requests whose bytes are broken in ways no generated client sends, over raw HTTP/2: each is answered
// with a specific status and a readable message, and leaves nothing behind on the server (no stream,
// no socket, no etcd watch) once the client is gone.
import { readdirSync, readlinkSync, readFileSync } from "node:fs";
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { useServer, eventually, sleep } from "../harness/suite.js";
import { scrape } from "../operations/support/metrics.js";

interface RawAnswer {
  /** grpc-status, or undefined when the stream was reset or never answered. */
  status?: number;
  message: string;
  /** The stream ended with RST_STREAM (or the session failed) instead of a status. */
  reset?: string;
  /** Nothing came within the timeout. */
  timedOut?: boolean;
  ms: number;
}

interface RawCall {
  path: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** Raw bytes to write, one write each, with pauseMs between them. */
  chunks: Buffer[];
  pauseMs?: number;
  /** Half-close after the last chunk (default true). */
  end?: boolean;
  timeoutMs?: number;
  /** An open session to use; else one of its own, closed afterwards. */
  session?: http2.ClientHttp2Session;
}

function rawCall(url: string, c: RawCall): Promise<RawAnswer> {
  const started = Date.now();
  const session = c.session ?? http2.connect(url);
  session.on("error", () => undefined);
  return new Promise((resolve) => {
    const fields = new Map<string, string>();
    let settled = false;
    const done = (extra: Partial<RawAnswer>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!c.session) session.destroy();
      const status = fields.get("grpc-status");
      let message = fields.get("grpc-message") ?? "";
      try {
        message = decodeURIComponent(message);
      } catch {
        // leave as sent
      }
      resolve({ status: status === undefined ? undefined : Number(status), message, ms: Date.now() - started, ...extra });
    };
    const timer = setTimeout(() => {
      req.close(http2.constants.NGHTTP2_CANCEL);
      done({ timedOut: true });
    }, c.timeoutMs ?? 10_000);
    const req = session.request({
      ":method": "POST",
      ":path": c.path,
      "content-type": c.contentType ?? "application/grpc",
      te: "trailers",
      ...c.headers,
    });
    const take = (h: http2.IncomingHttpHeaders) => {
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") fields.set(k, v);
    };
    // The status ends the call, though the client may not have half-closed its side yet.
    req.on("response", (h) => {
      take(h);
      if (h["grpc-status"] !== undefined) done({});
    });
    req.on("trailers", (h) => {
      take(h);
      done({});
    });
    req.on("error", (err) => done({ reset: err.message }));
    req.resume();
    req.on("close", () => done(req.rstCode && !fields.has("grpc-status") ? { reset: `RST_STREAM ${req.rstCode}` } : {}));
    void (async () => {
      for (const [i, chunk] of c.chunks.entries()) {
        if (i > 0 && c.pauseMs) await sleep(c.pauseMs);
        if (req.closed || req.destroyed) return;
        req.write(chunk);
      }
      if (c.end !== false && !req.closed) req.end();
    })();
  });
}

const frame = (payload: Buffer | string, flags = 0) => {
  const body = typeof payload === "string" ? Buffer.from(payload, "latin1") : payload;
  const f = Buffer.alloc(5 + body.length);
  f[0] = flags;
  f.writeUInt32BE(body.length, 1);
  body.copy(f, 5);
  return f;
};

/** The server process's open TCP sockets in CLOSE_WAIT: connections the client closed and the server kept. */
function closeWaitSockets(pid: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  let count = 0;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      // st 08 is CLOSE_WAIT; column 9 is the inode.
      if (cols[3] === "08" && inodes.has(cols[9])) count++;
    }
  }
  return count;
}

describe("hardening: broken bytes on the wire", function () {
  this.timeout(60_000);
  const s = useServer();
  const HEALTH = "/grpc.health.v1.Health/Check";
  const DESCRIBE = "/fencekeeper.v1.LeaseService/Describe";
  const KEEPALIVE = "/fencekeeper.v1.LeaseService/KeepAlive";
  const OBSERVE = "/fencekeeper.v1.LeaseService/Observe";

  describe("an unreadable message on a unary call served by connect is INVALID_ARGUMENT", () => {
    const cases: [string, RawCall][] = [
      ["a message that is not protobuf", { path: HEALTH, chunks: [frame(Buffer.from([0x0e]))] }],
      ["a frame marked compressed without grpc-encoding", { path: HEALTH, chunks: [frame(Buffer.from([0x0a, 0x00]), 1)] }],
      ["broken gzip", { path: HEALTH, headers: { "grpc-encoding": "gzip" }, chunks: [frame(Buffer.from("not gzip at all"), 1)] }],
      ["a truncated gzip", { path: HEALTH, headers: { "grpc-encoding": "gzip" }, chunks: [frame(gzipSync(Buffer.from([0x0a, 0x01, 0x78])).subarray(0, 8), 1)] }],
    ];
    for (const [name, call] of cases) {
      it(name, async () => {
        const a = await rawCall(s.server.url, call);
        expect(a.reset, a.message).to.equal(undefined);
        expect(a.status, a.message).to.equal(Code.InvalidArgument);
        expect(a.message).to.not.match(/^internal error$/);
      });
    }
  });

  describe("a message that cannot travel as grpc-message is still answered, with a readable one", () => {
    const cases: [string, RawCall, Code][] = [
      ["invalid UTF-8 before JSON (application/grpc+json, fast path)", { path: DESCRIBE, contentType: "application/grpc+json", chunks: [frame('\xa8{"resource":"x"}')] }, Code.InvalidArgument],
      ["a health service name that is not UTF-8 (connect path)", { path: HEALTH, chunks: [frame(Buffer.from([0x0a, 0x01, 0xff]))] }, Code.NotFound],
      [
        "valid UTF-8 that JSON.parse's message cuts inside a surrogate pair",
        { path: "/fencekeeper.v1.LeaseService/OpenSession", contentType: "application/grpc+json", chunks: [frame(Buffer.from('holder":"\u{132c6}24","ttl":"2s"}', "utf8"))] },
        Code.InvalidArgument,
      ],
      [
        "invalid UTF-8 in a KeepAlive stream's JSON (connect path)",
        { path: KEEPALIVE, contentType: "application/grpc+json", chunks: [frame('\xa8{"leaseId":"1"}')] },
        Code.InvalidArgument,
      ],
    ];
    for (const [name, call, code] of cases) {
      it(name, async () => {
        const a = await rawCall(s.server.url, call);
        expect(a.timedOut, "answered").to.equal(undefined);
        expect(a.reset, `not reset: ${a.message}`).to.equal(undefined);
        expect(a.status, a.message).to.equal(code);
        expect(a.message.length).to.be.greaterThan(0);
      });
    }
  });

  it("a KeepAlive over application/grpc+json answers a failed renewal with its error, ErrorInfo included, in JSON", async () => {
    const session = http2.connect(s.server.url);
    session.on("error", () => undefined);
    const req = session.request({ ":method": "POST", ":path": KEEPALIVE, "content-type": "application/grpc+json", te: "trailers" });
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => req.once("trailers", resolve));
    req.write(frame('{"leaseId":"12345"}'));
    await eventually(() => Buffer.concat(chunks).length >= 5, "an answer to the renewal", 10_000);
    req.end();
    expect((await trailers)["grpc-status"]).to.equal("0");
    session.destroy();
    const answer = JSON.parse(Buffer.concat(chunks).subarray(5).toString("utf8"));
    expect(answer.leaseId).to.equal("12345");
    expect(answer.error.code).to.equal(Code.NotFound);
    expect(answer.error.details[0]["@type"]).to.equal("type.googleapis.com/google.rpc.ErrorInfo");
  });

  it("a KeepAlive stream ended for an unreadable message is let go, though the client goes on sending", async () => {
    const pid = s.server.process.pid!;
    const before = closeWaitSockets(pid);
    for (let i = 0; i < 5; i++) {
      const session = http2.connect(s.server.url);
      session.on("error", () => undefined);
      const req = session.request({ ":method": "POST", ":path": KEEPALIVE, "content-type": "application/grpc", te: "trailers" });
      req.on("error", () => undefined);
      req.resume();
      const status = new Promise<string | undefined>((resolve) => req.once("trailers", (h) => resolve(h["grpc-status"] as string)));
      req.write(frame(Buffer.from([0xff, 0xff, 0xff])));
      expect(await status).to.equal(String(Code.InvalidArgument));
      // The client has not read the answer yet: it sends two more renewals and half-closes, then leaves.
      req.write(frame(Buffer.from([0x08, 0x01])));
      req.write(frame(Buffer.from([0x08, 0x02])));
      req.end();
      await new Promise((resolve) => req.once("close", resolve));
      session.destroy();
    }
    await eventually(() => closeWaitSockets(pid) <= before, "the server closed the connections the clients closed", 10_000);
  });

  describe("a stream's deadline ends it with DEADLINE_EXCEEDED", () => {
    it("Observe", async () => {
      const describeJson = Buffer.from('{"resource":"deadline-observe"}');
      const a = await rawCall(s.server.url, {
        path: OBSERVE,
        contentType: "application/grpc+json",
        headers: { "grpc-timeout": "300m" },
        chunks: [frame(describeJson)],
      });
      expect(a.status, a.message).to.equal(Code.DeadlineExceeded);
      expect(a.ms).to.be.lessThan(8_000);
    });
    it("KeepAlive, with the client still sending", async () => {
      const a = await rawCall(s.server.url, {
        path: KEEPALIVE,
        headers: { "grpc-timeout": "300m" },
        chunks: [frame(Buffer.alloc(0))],
        end: false,
      });
      expect(a.status, a.message).to.equal(Code.DeadlineExceeded);
      expect(a.ms).to.be.lessThan(8_000);
    });
  });

  it("a client that goes away in the middle of its streams is counted as CANCELLED, not INTERNAL", async () => {
    for (const path of [OBSERVE, KEEPALIVE]) {
      const session = http2.connect(s.server.url);
      session.on("error", () => undefined);
      const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc+json", te: "trailers" });
      req.on("error", () => undefined);
      req.resume();
      req.write(frame(path === OBSERVE ? '{"resource":"cancelled"}' : "{}"));
      await sleep(300);
      // The client goes away (its process ends, say): the connection closes under the open stream.
      session.destroy();
    }
    const handled = async (method: string, code: string) =>
      (await scrape(s.server)).value("grpc_server_handled_total", { grpc_method: method, grpc_code: code });
    await eventually(
      async () => (await handled("Observe", "Canceled")) >= 1 && (await handled("KeepAlive", "Canceled")) >= 1,
      "both cancels counted as Canceled",
      5_000,
    );
    expect(await handled("Observe", "Internal")).to.equal(0);
    expect(await handled("KeepAlive", "Internal")).to.equal(0);
    expect(s.server.logs.filter((l) => /"level":50/.test(l))).to.deep.equal([]);
  });
});

