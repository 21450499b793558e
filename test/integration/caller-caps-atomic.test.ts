// Caps that hold (issue 20, finding 6): --max-leases-per-caller is decided by etcd, so no interleaving of
// concurrent Acquires or OpenSessions, on one replica or two, grants past it; and without authentication
// the stream cap is per connection, so one client's Observes do not lock out another client of the same
// address.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { TestIssuer } from "../harness/bearer.js";
import { clientsFor } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { failure, sleep, uniqueResource } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("caps per caller that hold under concurrency", function () {
  this.timeout(120_000);
  let etcd: TestEtcd;
  let dir: string;
  let issuer: TestIssuer;
  const servers: TestServer[] = [];
  const jwtArgs = () => issuer.args;
  const as = async (url: string, sub: string): Promise<Client<typeof LeaseService>> => (await issuer.as(url, sub)).lease;

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-caps-atomic-"));
    issuer = await TestIssuer.create(dir);
  });
  after(async function () {
    this.timeout(30_000);
    await Promise.all(servers.map((s) => s.stop()));
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Settles every call; the granted count and the refusals. */
  const race = async (calls: Promise<unknown>[]) => {
    const settled = await Promise.allSettled(calls);
    const refusals = settled.flatMap((s) => (s.status === "rejected" ? [ConnectError.from(s.reason)] : []));
    return { granted: settled.length - refusals.length, refusals };
  };

  it("200 concurrent Acquires of one principal against a cap of 5, spread over two replicas on one etcd: exactly 5 granted, the rest RESOURCE_EXHAUSTED naming the cap", async () => {
    const prefix = `/fk-test-caps-${process.pid}/`;
    const args = [...jwtArgs(), "--max-leases-per-caller", "5"];
    const [a, b] = await Promise.all([startServer({ etcd: etcd.endpoint, prefix, args }), startServer({ etcd: etcd.endpoint, prefix, args })]);
    servers.push(a, b);
    const [onA, onB] = await Promise.all([as(a.url, "dave"), as(b.url, "dave")]);
    const { granted, refusals } = await race(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? onA : onB).acquire({ resource: uniqueResource("cap5"), ttl: ttl(30), holder: `h${i}` })),
    );
    expect(granted, "grants").to.equal(5);
    for (const e of refusals) {
      expect(e.code, e.message).to.equal(Code.ResourceExhausted);
      expect(e.rawMessage).to.include("--max-leases-per-caller 5");
    }
    // Sessions count against the same cap, concurrently too.
    const sessions = await race(Array.from({ length: 50 }, () => onA.openSession({ ttl: ttl(30), holder: "dave" })));
    expect(sessions.granted, "sessions granted past a full cap").to.equal(0);
  });

  it("100 concurrent OpenSessions of a principal that no cap was reached for, cap 3, on one replica: exactly 3 open; once one is closed, one more", async () => {
    const server = await startServer({ etcd: etcd.endpoint, args: [...jwtArgs(), "--max-leases-per-caller", "3"] });
    servers.push(server);
    const erin = await as(server.url, "erin");
    const sessions: bigint[] = [];
    const { granted, refusals } = await race(Array.from({ length: 100 }, () => erin.openSession({ ttl: ttl(30), holder: "erin" }).then((s) => sessions.push(s.sessionId))));
    expect(granted).to.equal(3);
    expect(refusals.every((e) => e.code === Code.ResourceExhausted), refusals.map((e) => e.message).join("; ")).to.equal(true);
    await erin.closeSession({ sessionId: sessions[0] });
    const again = await race(Array.from({ length: 20 }, () => erin.openSession({ ttl: ttl(30), holder: "erin" })));
    expect(again.granted, "a freed slot is taken once").to.equal(1);
  });

  it("a cap larger than the window a claim reads after a miss (cap 700, 256 a read): 760 Acquires fill exactly 700, the rest RESOURCE_EXHAUSTED; a release frees one slot, taken once", async () => {
    const server = await startServer({ etcd: etcd.endpoint, args: [...jwtArgs(), "--max-leases-per-caller", "700"] });
    servers.push(server);
    const fay = await as(server.url, "fay");
    const tokens: { resource: string; generation: bigint; leaseId: bigint }[] = [];
    let granted = 0;
    const refusals: ConnectError[] = [];
    // 50 at a time: a random slot misses more and more often as the cap fills, and each miss reads a window.
    for (let i = 0; i < 760; i += 50) {
      const r = await race(
        Array.from({ length: Math.min(50, 760 - i) }, (_, j) => fay.acquire({ resource: uniqueResource("cap700"), ttl: ttl(60), holder: `h${i + j}` }).then((a) => tokens.push(a.token!))),
      );
      granted += r.granted;
      refusals.push(...r.refusals);
    }
    expect(granted, "grants").to.equal(700);
    expect(refusals.length).to.equal(60);
    for (const e of refusals) expect(e.code, e.message).to.equal(Code.ResourceExhausted);
    await fay.release({ token: tokens[0] });
    const again = await race(Array.from({ length: 10 }, () => fay.acquire({ resource: uniqueResource("cap700"), ttl: ttl(60), holder: "again" })));
    expect(again.granted, "a freed slot is taken once").to.equal(1);
  });

  it("without authentication, two connections from 127.0.0.1 each have their own stream cap: one client at its cap of Observes does not lock out the other", async () => {
    const server = await startServer({ etcd: etcd.endpoint, args: ["--max-streams-per-caller", "3"] });
    servers.push(server);
    const resource = uniqueResource("observe-cap");
    const stop = new AbortController();
    const open = async (lease: Client<typeof LeaseService>) => {
      const it = lease.observe({ resource }, { signal: stop.signal })[Symbol.asyncIterator]();
      await it.next();
    };
    try {
      const first = clientsFor(server.url).lease;
      const second = clientsFor(server.url).lease;
      for (let i = 0; i < 3; i++) await open(first);
      const e = await failure(open(first));
      expect(e.code, e.message).to.equal(Code.ResourceExhausted);
      for (let i = 0; i < 3; i++) await open(second);
    } finally {
      stop.abort();
      await sleep(100);
    }
  });
});
