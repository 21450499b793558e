// Limits that hold under abuse (issue 10, item 5), against real servers: connections that say nothing
// or stop halfway are closed; one caller's streams and waiters are capped (RESOURCE_EXHAUSTED naming the
// cap) without touching another caller's; and a flood of renewals on one KeepAlive stream neither grows
// the server without bound nor makes a bystander's renewals fail.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code, createClient } from "@connectrpc/connect";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { clientsFor } from "../harness/clients.js";
import { TestIssuer } from "../harness/bearer.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, failure, sleep, uniqueResource } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

describe("limits that hold under abuse", function () {
  this.timeout(120_000);
  let etcd: TestEtcd;
  const servers: TestServer[] = [];
  const serve = async (args: string[]) => {
    const s = await startServer({ etcd: etcd.endpoint, args });
    servers.push(s);
    return s;
  };
  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
  });
  after(async function () {
    this.timeout(30_000);
    await Promise.all(servers.map((s) => s.stop()));
    await etcd?.destroy();
  });

  it("connections that send nothing, stop inside the HTTP/2 preface or the HTTP/1.1 headers, or open HTTP/2 and go quiet, are closed; a real client is served throughout", async () => {
    const server = await serve(["--handshake-timeout", "1000", "--idle-timeout", "2000"]);
    const { port } = new URL(server.url);
    const raw = (first?: string) =>
      new Promise<{ closed: Promise<number> }>((resolve, reject) => {
        const opened = Date.now();
        const socket = net.connect(Number(port), "127.0.0.1", () => {
          if (first) socket.write(first);
          resolve({ closed: new Promise((r) => socket.once("close", () => r(Date.now() - opened))) });
        });
        socket.on("error", () => undefined);
        socket.once("error", reject);
      });
    const silent = await Promise.all(Array.from({ length: 150 }, () => raw()));
    const halfPreface = await Promise.all(Array.from({ length: 150 }, () => raw("PRI * HTTP/2.0\r\n")));
    const halfHeaders = await Promise.all(Array.from({ length: 150 }, () => raw("POST /fencekeeper.v1.LeaseService/Describe HTTP/1.1\r\nHost: x\r\n")));
    const quietSessions = Array.from({ length: 50 }, () => {
      const session = http2.connect(server.url);
      session.on("error", () => undefined);
      return new Promise<number>((r) => {
        const opened = Date.now();
        session.once("close", () => r(Date.now() - opened));
      });
    });
    // Meanwhile, a client that speaks is served.
    const { lease } = clientsFor(server.url);
    await lease.acquire({ resource: uniqueResource("busy"), ttl: ttl(5), holder: "real" });

    const closedAfter = await Promise.all([...silent, ...halfPreface, ...halfHeaders].map((c) => c.closed));
    expect(Math.max(...closedAfter), "every half-open connection is closed within the handshake timeout (1 s) and a margin").to.be.below(4000);
    const sessionsClosedAfter = await Promise.all(quietSessions);
    expect(Math.max(...sessionsClosedAfter), "quiet HTTP/2 sessions are closed after the idle timeout (2 s)").to.be.within(1500, 8000);
    // The real client's own connection has been idle for about as long as the quiet ones: the server may
    // be closing it (GOAWAY) just as a call starts on it, which the client sees as REFUSED_STREAM. A
    // client that connects now is served.
    await clientsFor(server.url).lease.acquire({ resource: uniqueResource("busy"), ttl: ttl(5), holder: "real" });
  });

  describe("caps per caller (two principals, bearer JWTs)", () => {
    let dir: string;
    let server: TestServer;
    let alice: ReturnType<typeof createClient<typeof LeaseService>>;
    let bob: ReturnType<typeof createClient<typeof LeaseService>>;
    let carol: ReturnType<typeof createClient<typeof LeaseService>>;

    before(async function () {
      this.timeout(60_000);
      dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-caps-"));
      const issuer = await TestIssuer.create(dir);
      server = await serve([...issuer.args, "--max-streams-per-caller", "3", "--max-waiters-per-caller", "2", "--max-leases-per-caller", "3"]);
      const as = async (sub: string) => (await issuer.as(server.url, sub)).lease;
      alice = await as("alice");
      bob = await as("bob");
      carol = await as("carol");
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it("a fourth open stream of alice's is RESOURCE_EXHAUSTED naming the cap of 3; bob opens his; alice's next one goes once one of hers ends", async () => {
      const resource = uniqueResource("caps");
      const opened: AbortController[] = [];
      const open = async (client: typeof alice) => {
        const stop = new AbortController();
        const it = client.observe({ resource }, { signal: stop.signal })[Symbol.asyncIterator]();
        await it.next(); // the first message: the stream is open
        opened.push(stop);
        return stop;
      };
      try {
        const mine = [await open(alice), await open(alice), await open(alice)];
        const e = await failure(open(alice));
        expect(e.code, e.message).to.equal(Code.ResourceExhausted);
        expect(e.rawMessage).to.include("3");
        await open(bob);
        mine[0].abort();
        await sleep(200);
        await open(alice);
      } finally {
        for (const c of opened) c.abort();
      }
    });

    it("carol may hold 3 leases and sessions: a fourth Acquire or OpenSession is RESOURCE_EXHAUSTED naming the cap; acquisitions on her session do not count; once she releases one she may acquire again", async () => {
      const held = [];
      for (let i = 0; i < 2; i++) held.push((await carol.acquire({ resource: uniqueResource("cap"), ttl: ttl(30), holder: "carol" })).token!);
      const { sessionId } = await carol.openSession({ ttl: ttl(30), holder: "carol" });
      for (const call of [
        () => carol.acquire({ resource: uniqueResource("cap"), ttl: ttl(30), holder: "carol" }),
        () => carol.openSession({ ttl: ttl(30), holder: "carol" }),
      ]) {
        const e = await failure(call());
        expect(e.code, e.message).to.equal(Code.ResourceExhausted);
        expect(e.rawMessage).to.include("3");
      }
      // On her session: as many as she likes.
      for (let i = 0; i < 5; i++) await carol.acquire({ resource: uniqueResource("cap"), sessionId, holder: "carol" });
      await bob.acquire({ resource: uniqueResource("cap"), ttl: ttl(30), holder: "bob" });
      await carol.release({ token: held[0] });
      await eventually(
        () => carol.acquire({ resource: uniqueResource("cap"), ttl: ttl(30), holder: "carol" }).then(() => true, () => false),
        "carol acquires once a lease of hers is gone",
      );
    });

    it("a third waiting Acquire of alice's is RESOURCE_EXHAUSTED naming the cap of 2; bob may still wait", async () => {
      const resource = uniqueResource("caps");
      await alice.acquire({ resource, ttl: ttl(10), holder: "alice" });
      const stop = new AbortController();
      const waiting = [0, 1].map(() => alice.acquire({ resource, ttl: ttl(10), holder: "alice", wait: true }, { signal: stop.signal }).catch(() => undefined));
      try {
        await sleep(300);
        const e = await failure(alice.acquire({ resource, ttl: ttl(10), holder: "alice", wait: true }));
        expect(e.code, e.message).to.equal(Code.ResourceExhausted);
        expect(e.rawMessage).to.include("2");
        const bobWaits = bob.acquire({ resource, ttl: ttl(10), holder: "bob", wait: true }, { signal: stop.signal }).then(
          () => "granted",
          (err) => String(err),
        );
        await sleep(300);
        stop.abort();
        expect(await bobWaits).to.match(/cancel/i);
      } finally {
        stop.abort();
        await Promise.all(waiting);
      }
    });
  });

  it("a KeepAlive stream that sends messages faster than --max-stream-messages-per-second is read more slowly, not ended: 300 messages at once at 50 a second (bursts of 100) are all answered, over about 4 s", async () => {
    const server = await serve(["--max-stream-messages-per-second", "50"]);
    const { lease } = clientsFor(server.url);
    const leaseId = (await lease.acquire({ resource: uniqueResource("rate"), ttl: ttl(30), holder: "rate" })).token!.leaseId;
    const started = Date.now();
    let answers = 0;
    for await (const a of lease.keepAlive(
      (async function* () {
        for (let i = 0; i < 300; i++) yield { leaseId };
      })(),
    )) {
      expect(a.error).to.equal(undefined);
      answers++;
    }
    expect(answers).to.equal(300);
    expect(Date.now() - started, "ms to be read at 50 a second after a burst of 100").to.be.above(3500);
  });

  it("one KeepAlive stream sending 40,000 renewals: the server stays within bounds, and a bystander renewing a 5 s lease every 500 ms never misses", async function () {
    this.timeout(120_000);
    const server = await serve([]);
    // Two clients, as two programs would be: each its own connection.
    const { lease } = clientsFor(server.url);
    const { lease: bystanderLease } = clientsFor(server.url);
    const baseline = rssMb(server.process.pid!);
    // The flooder renews 2,000 leases of its own over and over, so that the flood is not one lease asked for
    // again and again (which the server would coalesce) but real work for etcd.
    const flooders: bigint[] = [];
    for (let i = 0; i < 2000; i += 100) {
      const batch = await Promise.all(Array.from({ length: 100 }, () => lease.acquire({ resource: uniqueResource("flood"), ttl: ttl(60), holder: "flood" })));
      flooders.push(...batch.map((b) => b.token!.leaseId));
    }
    const victim = (await lease.acquire({ resource: uniqueResource("victim"), ttl: ttl(5), holder: "victim" })).token!.leaseId;

    let flooding = true;
    const victimLatencies: number[] = [];
    const victimErrors: string[] = [];
    const bystander = (async () => {
      while (flooding) {
        const sent = Date.now();
        try {
          await bystanderLease.renew({ leaseId: victim }, { timeoutMs: 5000 });
          victimLatencies.push(Date.now() - sent);
        } catch (e) {
          victimErrors.push(String(e));
        }
        await sleep(500);
      }
    })();

    const TOTAL = 40_000;
    const PER_MESSAGE = 1000;
    let peakRss = baseline;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(server.process.pid!))), 250);
    let answered = 0;
    try {
      for await (const a of lease.keepAlive(
        (async function* () {
          for (let sent = 0; sent < TOTAL; sent += PER_MESSAGE) yield { leaseIds: Array.from({ length: PER_MESSAGE }, (_, i) => flooders[(sent + i) % flooders.length]) };
        })(),
      )) {
        answered += a.renewals.length;
      }
    } finally {
      flooding = false;
      clearInterval(sampler);
      await bystander;
    }
    expect(answered).to.equal(TOTAL);
    expect(victimErrors, "the bystander's renewals").to.deep.equal([]);
    expect(Math.max(...victimLatencies), "the bystander's slowest renewal, ms").to.be.below(2500);
    expect(peakRss - baseline, `the server's RSS grew from ${baseline.toFixed(0)} MB to ${peakRss.toFixed(0)} MB`).to.be.below(300);
    console.log(`      40,000 renewals: RSS ${baseline.toFixed(0)} -> peak ${peakRss.toFixed(0)} MB; bystander's slowest renewal ${Math.max(...victimLatencies)} ms over ${victimLatencies.length} renewals`);
  });
});
