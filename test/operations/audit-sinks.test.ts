// The audit trail against sinks that misbehave, with real servers: a FIFO nobody reads (the server starts,
// serves, and says so), a FIFO whose reader stops reading, a disk that fills and then has room again (a
// small tmpfs), and a file removed while the server writes it. Whatever the sink does, calls are served,
// every line that reaches it is whole and parses, and each line is counted exactly once, as written or as
// dropped. And what no caller should be able to do to the trail: write a line per unauthenticated call,
// or put raw line separators and bidi controls in it.
import { execFileSync } from "node:child_process";
import { closeSync, constants, existsSync, mkdtempSync, openSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, uniqueResource } from "../harness/suite.js";
import { scrape } from "./support/metrics.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
/** A long resource name makes long lines: the pipe and the disk fill sooner. */
const LONG = "x".repeat(200);

type Line = Record<string, unknown>;

/** Every line of the text parses as one JSON object; a torn or glued line fails here. */
function parseAll(text: string): Line[] {
  expect(text === "" || text.endsWith("\n"), "the text ends with a whole line").to.equal(true);
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => {
      try {
        return JSON.parse(l) as Line;
      } catch {
        throw new Error(`not a whole audit line: ${l.slice(0, 120)}`);
      }
    });
}

async function counts(server: TestServer): Promise<{ written: number; dropped: number }> {
  const m = await scrape(server);
  return { written: m.value("fencekeeper_audit_written_total"), dropped: m.value("fencekeeper_audit_dropped_total") };
}

/** Acquisitions of fresh resources, `parallel` at a time: one "granted" line each. */
async function grants(server: TestServer, n: number, parallel = 10): Promise<void> {
  const lease = createClient(LeaseService, createGrpcTransport({ baseUrl: server.url }));
  for (let done = 0; done < n; done += parallel) {
    await Promise.all(
      Array.from({ length: Math.min(parallel, n - done) }, () => lease.acquire({ resource: uniqueResource(`audit/${LONG}`), ttl: ttl(60), holder: "h" })),
    );
  }
}

/** A FIFO's reading end, opened without waiting for a writer, read as a socket; paused until resumed. */
function fifoReader(path: string): { socket: net.Socket; text: () => string } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const socket = new net.Socket({ fd, readable: true, writable: false });
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  socket.on("error", () => undefined);
  return { socket, text: () => Buffer.concat(chunks).toString("utf8") };
}

describe("the audit trail's sinks", function () {
  this.timeout(180_000);
  let etcd: TestEtcd;
  let dir: string;
  const servers: TestServer[] = [];
  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-audit-sinks-"));
  });
  after(async function () {
    this.timeout(30_000);
    await Promise.all(servers.map((s) => s.stop()));
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  const start = async (file: string, args: string[] = []) => {
    const server = await startServer({ etcd: etcd.endpoint, args: ["--audit-log", file, ...args] });
    servers.push(server);
    return server;
  };

  it("a FIFO nobody reads: the server starts and serves, says why lines are dropped, and writes them once a reader comes", async () => {
    const fifo = join(dir, "unread.fifo");
    execFileSync("mkfifo", [fifo]);
    const server = await start(fifo);
    await grants(server, 3);
    await eventually(() => server.logs.some((l) => l.includes("audit lines dropped") && l.includes("FIFO that no process has open for reading")), "the log says nobody reads the FIFO", 10_000);
    const reader = fifoReader(fifo);
    try {
      // The sink opens it again a second after its failure: lines from then on are written.
      await eventually(async () => {
        await grants(server, 1, 1);
        return (await counts(server)).written >= 1;
      }, "lines written once a reader has the FIFO open", 20_000);
      await eventually(() => server.logs.some((l) => l.includes("audit lines are written again")), "the log says it writes again", 5000);
      const c = await counts(server);
      await eventually(() => parseAll(reader.text()).length === c.written, `the reader has the ${c.written} lines written`, 10_000);
      expect(parseAll(reader.text()).every((l) => l.kind === "granted")).to.equal(true);
    } finally {
      reader.socket.destroy();
    }
  });

  it("a FIFO whose reader goes away: calls go on, the log says so, and each line is counted once", async () => {
    const fifo = join(dir, "gone.fifo");
    execFileSync("mkfifo", [fifo]);
    const reader = fifoReader(fifo);
    const server = await start(fifo);
    await grants(server, 3);
    // The startup's "keys loaded" and the 3 grants.
    await eventually(() => parseAll(reader.text()).length === 4, "the reader has 4 lines", 10_000);
    reader.socket.destroy();
    await eventually(async () => {
      await grants(server, 1, 1);
      return server.logs.some((l) => l.includes("audit lines dropped") && (l.includes("its reader has gone") || l.includes("no process has open for reading")));
    }, "the log says the reader is gone", 20_000);
    const c = await counts(server);
    expect(c.written, "what the reader got, and nothing after").to.equal(4);
    expect(c.dropped).to.be.greaterThan(0);
  });

  it("a FIFO whose reader stops reading: calls go on, the stall is logged, and what the reader gets later is whole lines, as many as counted written", async () => {
    const fifo = join(dir, "stalled.fifo");
    execFileSync("mkfifo", [fifo]);
    const reader = fifoReader(fifo);
    try {
      reader.socket.pause();
      const server = await start(fifo);
      // About 450 bytes a line: 300 lines are twice what a pipe holds (64 KiB).
      const N = 300;
      await grants(server, N);
      await eventually(() => server.logs.some((l) => l.includes("its reader does not read")), "the stall is logged", 15_000);
      reader.socket.resume();
      await eventually(async () => {
        const c = await counts(server);
        // The grants' lines and the startup's "keys loaded".
        return c.written + c.dropped === N + 1;
      }, "each line counted once, written or dropped", 30_000);
      const c = await counts(server);
      await eventually(() => parseAll(reader.text()).length === c.written, `the reader has the ${c.written} lines written`, 10_000);
      expect(c.written, "some lines got through").to.be.greaterThan(0);
    } finally {
      reader.socket.destroy();
    }
  });

  it("a disk that fills, then has room again: no torn or glued line, and the file holds exactly the lines counted written", async function () {
    const mount = mkdtempSync(join(tmpdir(), "fencekeeper-test-audit-tmpfs-"));
    // A tmpfs of 96 KiB; a filler leaves about 16 KiB for the trail.
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=96k", "tmpfs", mount]);
    try {
      const filler = join(mount, "filler");
      writeFileSync(filler, Buffer.alloc(80 * 1024));
      const file = join(mount, "audit.jsonl");
      const server = await start(file);
      await grants(server, 100);
      await eventually(async () => (await counts(server)).dropped > 0, "the full disk drops lines", 15_000);
      expect(server.logs.some((l) => l.includes("audit lines dropped") && l.includes("the disk is full"))).to.equal(true);
      unlinkSync(filler);
      // Room again: lines are written again after the pause that follows a failure.
      const dropped = (await counts(server)).dropped;
      const written = (await counts(server)).written;
      await eventually(async () => {
        await grants(server, 5, 5);
        return (await counts(server)).written > written;
      }, "lines written again once there is room", 20_000);
      // Quiet now: the counts stand still, and the file holds what they say.
      const stable = async () => {
        const a = await counts(server);
        await new Promise((r) => setTimeout(r, 300));
        const b = await counts(server);
        return a.written === b.written && a.dropped === b.dropped;
      };
      await eventually(stable, "the writer is done", 10_000);
      const c = await counts(server);
      const lines = parseAll(readFileSync(file, "utf8"));
      expect(lines.length, "lines in the file = lines counted written").to.equal(c.written);
      expect(c.dropped).to.be.at.least(dropped);
      await server.stop();
      // Written and dropped add up to every grant and the startup's "keys loaded" line.
      expect(parseAll(readFileSync(file, "utf8")).length).to.equal(c.written);
    } finally {
      for (const s of servers.splice(0)) await s.stop();
      execFileSync("umount", [mount]);
      rmSync(mount, { recursive: true, force: true });
    }
  });

  it("a file removed while the server writes it: the next lines go to a new file at the path, each counted once", async () => {
    const file = join(dir, "removed.jsonl");
    const server = await start(file);
    await grants(server, 5);
    await eventually(async () => (await counts(server)).written === 6, "the startup line and 5 grants written", 10_000);
    const first = parseAll(readFileSync(file, "utf8"));
    unlinkSync(file);
    await grants(server, 4);
    await eventually(async () => (await counts(server)).written === 10, "4 more written", 10_000);
    expect(existsSync(file)).to.equal(true);
    const second = parseAll(readFileSync(file, "utf8"));
    expect(first.length + second.length).to.equal(10);
    expect(second.map((l) => l.kind)).to.deep.equal(["granted", "granted", "granted", "granted"]);
    expect((await counts(server)).dropped).to.equal(0);
  });

  it("unauthenticated refusals: the first from an address is written, the rest are counted into a summary line", async () => {
    const keyDir = mkdtempSync(join(dir, "jwt-"));
    const { exportSPKI, generateKeyPair } = await import("jose");
    const pair = await generateKeyPair("ES256");
    writeFileSync(join(keyDir, "jwt.pem"), await exportSPKI(pair.publicKey));
    const file = join(dir, "flood.jsonl");
    const server = await start(file, ["--jwt-keys", join(keyDir, "jwt.pem"), "--jwt-issuer", "https://issuer.test", "--jwt-audience", "fencekeeper"]);
    const lease = createClient(LeaseService, createGrpcTransport({ baseUrl: server.url }));
    const N = 200;
    for (let i = 0; i < N; i += 20) await Promise.all(Array.from({ length: 20 }, () => lease.describe({ resource: "r" }).catch(() => undefined)));
    // A refusal is noted as its call ends, before the answer: the count is final once the calls are.
    const summarized = (await scrape(server)).value("fencekeeper_audit_summarized_total");
    // The summary is written at the end of its time (10 s), or at shutdown.
    expect(await server.stop()).to.equal(0);
    const refused = parseAll(readFileSync(file, "utf8")).filter((l) => l.kind === "refused");
    for (const l of refused) expect(l).to.include({ reason: "UNAUTHENTICATED", rpc: "fencekeeper.v1.LeaseService/Describe" });
    const each = refused.filter((l) => l.count === undefined);
    const summaries = refused.filter((l) => l.count !== undefined);
    // One line per 10 s for the first refusal, one for the rest; however slow the machine, far fewer than N.
    expect(each.length).to.be.at.least(1);
    expect(summaries.length).to.be.at.least(1);
    expect(refused.length).to.be.below(20);
    for (const l of each) expect(l.requestId).to.be.a("string");
    for (const l of summaries) {
      expect(l).to.include({ address: "127.0.0.1" });
      expect(l.requestId).to.equal(undefined);
      expect(Date.parse(l.since as string)).to.be.at.most(Date.parse(l.time as string));
    }
    const folded = summaries.reduce((n, l) => n + (l.count as number), 0);
    expect(folded).to.equal(summarized);
    expect(each.length + folded, "every refusal is in a line or a summary's count").to.equal(N);
  });

  it("line and paragraph separators and bidi controls in a name are escaped: each line is one line, and reads back as the name", async () => {
    const file = join(dir, "escaped.jsonl");
    const server = await start(file);
    const lease = createClient(LeaseService, createGrpcTransport({ baseUrl: server.url }));
    const name = `escape/a\u2028b\u2029c\u202Ed\u2067e\u200Ff`;
    await lease.acquire({ resource: name, ttl: ttl(30), holder: "h" });
    await eventually(async () => (await counts(server)).written === 2, "the startup line and the grant written", 10_000);
    const text = readFileSync(file, "utf8");
    expect(/[\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f]/.test(text), "no raw separator or bidi control in the file").to.equal(false);
    expect(text.split(/\r\n|\r|\n|\u2028|\u2029|\u0085/).filter((l) => l !== "")).to.have.length(2);
    expect(parseAll(text).find((l) => l.kind === "granted")!.resource).to.equal(name);
    closeSync(openSync(file, "r"));
  });
});
