// Attacks on the wire that need no credentials: decompression bombs, and requests whose bodies never end
// or trickle in. Each is refused quickly with a specific status, and the server stays responsive to
// everyone else while it happens.
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { constants, createBrotliCompress, gzipSync } from "node:zlib";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { useServer } from "../harness/suite.js";

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
  const session = c.session ?? http2.connect(url);
  session.on("error", () => undefined);
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
