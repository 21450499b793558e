// The SDK on sessions (ClientOptions.sessions): acquisitions of one TTL share a session that the client
// opens once and renews with one renewal for all of them; each lease keeps its own token, signal and
// release; losing the session loses every lease on it at once; a paused holder on a session loses its
// leases on its first look after the pause, and its stale write is refused.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { shownToOthers } from "../harness/clients.js";
import { FencekeeperClient, LeaseLostError, ResourceHeldError, type ClientEvent, type Lease } from "../../client/index.js";
import { startDelayProxy } from "../harness/delay-proxy.js";
import { nodeProgram } from "../harness/programs.js";
import type { TestServer } from "../harness/server.js";
import { eventually, sleep, uniqueResource, useServer } from "../harness/suite.js";

type Of<T extends ClientEvent["type"]> = Extract<ClientEvent, { type: T }>;

/** The server's count of renewals answered OK on KeepAlive streams (fencekeeper_lease_renewals_total). */
async function renewalsCounted(server: TestServer): Promise<number> {
  const url = server.logs.map((l) => (l.startsWith("{") ? JSON.parse(l) : {})).find((e) => e.msg === "metrics")?.url;
  const text = await (await fetch(url)).text();
  const m = /^fencekeeper_lease_renewals_total\{grpc_method="KeepAlive",result="OK"\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : 0;
}

describe("client: sessions", () => {
  const s = useServer(); // with metrics, on a port of its own
  let fk: FencekeeperClient;
  let events: { at: number; e: ClientEvent }[];
  const seen = <T extends ClientEvent["type"]>(type: T, since = 0) =>
    events.filter(({ at, e }) => e.type === type && at >= since).map(({ e }) => e as Of<T>);
  const client = (servers = s.server.url) => new FencekeeperClient({ servers, sessions: true, holder: "tester", onEvent: (e) => events.push({ at: Date.now(), e }) });
  beforeEach(() => {
    events = [];
    fk = client();
  });
  afterEach(() => fk.close());

  it("puts the leases of one TTL on one session, renewed with one id in one message per renewal", async () => {
    const ttl = 2000;
    const names = Array.from({ length: 5 }, () => uniqueResource("shared"));
    const leases = await Promise.all(names.map((n) => fk.acquire(n, { ttl })));
    expect(fk.sessions).to.equal(true);
    const [opened, ...more] = seen("session-opened");
    expect(more, "opened once, though five acquisitions asked at once").to.deep.equal([]);
    expect(opened.ttlMs).to.equal(ttl);
    for (const [i, lease] of leases.entries()) {
      expect(lease.token.leaseId, "the token's lease is the session").to.equal(opened.sessionId);
      expect(lease.ttlMs).to.equal(ttl);
      expect(shownToOthers((await fk.describe(names[i])).token!)).to.deep.equal(shownToOthers(lease.token));
    }

    const counted = await renewalsCounted(s.server);
    const from = Date.now();
    await sleep(ttl + 500); // past the TTL: only the session's renewals keep the leases
    const sent = seen("keepalive-sent", from);
    const renewed = seen("session-renewed", from);
    expect(leases.every((l) => l.held)).to.equal(true);
    expect(sent.length, "one message per renewal interval (TTL / 3)").to.be.within(3, 5);
    expect(sent.every((m) => m.leases === 1), "each message renews the session alone").to.equal(true);
    expect(renewed).to.have.length.within(sent.length - 1, sent.length + 1);
    expect(renewed.every((r) => r.sessionId === opened.sessionId && r.leases === 5)).to.equal(true);
    expect(seen("renewed"), "no per-lease renewals").to.deep.equal([]);
    // The server renewed one lease per message, not five.
    expect((await renewalsCounted(s.server)) - counted).to.be.within(sent.length - 1, sent.length + 1);
    // Every lease's deadline is the session's: the send of its last confirmed renewal + TTL - drift.
    // The last renewal confirmed now, read in the same turn as the leases' deadlines (one may have come
    // in during the awaits above).
    const last = seen("session-renewed", from).at(-1)!;
    expect(last.validUntil.getTime()).to.be.closeTo(last.sentAt.getTime() + ttl - (100 + ttl / 100), 2);
    for (const lease of leases) expect(lease.validUntil.getTime()).to.be.closeTo(last.validUntil.getTime(), 2);
  });

  it("releasing one lease on a session ends that acquisition only; the others stay held and renewed", async () => {
    const ttl = 2000;
    const names = [uniqueResource("keep"), uniqueResource("drop"), uniqueResource("keep")];
    const [a, b, c] = await Promise.all(names.map((n) => fk.acquire(n, { ttl })));
    await b.release();
    expect(b.signal.reason).to.be.instanceOf(LeaseLostError).and.include({ why: "released" });
    expect((await fk.describe(names[1])).held).to.equal(false);
    await sleep(ttl + 500);
    for (const [i, lease] of [a, c].entries()) {
      expect(lease.held).to.equal(true);
      expect(lease.signal.aborted).to.equal(false);
      expect(shownToOthers((await fk.describe(names[i * 2])).token!)).to.deep.equal(shownToOthers(lease.token));
    }
    expect((await a.put("k", "v")).fence).to.equal(a.token.generation);
    // The session may take the released resource again: a new generation on the same session.
    const again = await fk.acquire(names[1], { ttl });
    expect(again.token.leaseId).to.equal(b.token.leaseId);
    expect(again.token.generation > b.token.generation).to.equal(true);
    expect(seen("session-opened")).to.have.length(1);
  });

  it("opens one session per TTL (rounded up to whole seconds, as etcd grants), and close() closes them", async () => {
    const held = await Promise.all([
      ...Array.from({ length: 6 }, () => fk.acquire(uniqueResource("ttl3"), { ttl: 3000 })),
      fk.acquire(uniqueResource("ttl2500"), { ttl: 2500 }),
      fk.acquire(uniqueResource("ttl5"), { ttl: 5000 }),
    ]);
    const ids = new Set(held.map((l) => l.token.leaseId));
    expect(ids.size).to.equal(2);
    expect(held[6].token.leaseId, "2.5 s is granted as 3 s: the same session").to.equal(held[0].token.leaseId);
    expect(seen("session-opened").map((e) => e.ttlMs).sort()).to.deep.equal([3000, 5000]);
    await fk.close();
    const ended = seen("session-ended");
    expect(ended.map((e) => e.why)).to.deep.equal(["released", "released"]);
    expect(ended.reduce((n, e) => n + e.leases, 0)).to.equal(8);
    for (const lease of held) {
      expect(lease.signal.reason).to.include({ why: "released" });
      expect((await fk.describe(lease.token.resource)).held, "CloseSession released it").to.equal(false);
    }
  });

  it("a session that is gone loses every lease on it at once; the next acquisition opens a new session", async () => {
    const ttl = 2000;
    const leases = await Promise.all([1, 2, 3].map(() => fk.acquire(uniqueResource("gone"), { ttl })));
    const sessionId = leases[0].token.leaseId;
    await s.lease.closeSession({ sessionId }); // behind the holder's back, as an expiry in etcd would
    await eventually(() => leases.some((l) => l.signal.aborted), "the next renewal finds the session gone", ttl);
    const reasons = leases.map((l) => l.signal.reason as LeaseLostError);
    expect(reasons.map((r) => r.why)).to.deep.equal(["not-found", "not-found", "not-found"]);
    // One answer ends them all: milliseconds apart at most (a loaded machine can stretch one turn of the
    // event loop), where leases renewed each on its own would be a renewal interval apart.
    expect(Math.max(...reasons.map((r) => r.lostAt.getTime())) - Math.min(...reasons.map((r) => r.lostAt.getTime()))).to.be.below(50);
    expect(seen("session-ended")).to.deep.include({ type: "session-ended", sessionId, why: "not-found", leases: 3 });
    expect(seen("lost")).to.have.length(3);
    const next = await fk.acquire(uniqueResource("gone"), { ttl });
    expect(next.token.leaseId).to.not.equal(sessionId);
    expect(next.held).to.equal(true);
  });

  it("when the session's renewals are answered too late, every lease on it is lost at the session's deadline", async () => {
    const ttl = 2000;
    const proxy = await startDelayProxy(s.server.url);
    const slow = client(proxy.url);
    try {
      const leases = await Promise.all([1, 2, 3].map(() => slow.acquire(uniqueResource("late"), { ttl })));
      await eventually(() => seen("session-renewed").length > 0, "a renewal is confirmed", ttl);
      proxy.setDelay(ttl + 1000, "toClient");
      const lostAt = await Promise.all(leases.map((l) => new Promise<number>((resolve) => l.signal.addEventListener("abort", () => resolve(performance.now()), { once: true }))));
      const reasons = leases.map((l) => l.signal.reason as LeaseLostError);
      expect(reasons.map((r) => r.why)).to.deep.equal(["deadline", "deadline", "deadline"]);
      const validUntil = reasons[0].validUntil.getTime();
      const last = seen("session-renewed").at(-1)!;
      expect(validUntil).to.be.closeTo(last.validUntil.getTime(), 2);
      for (const r of reasons) {
        expect(r.validUntil.getTime()).to.be.closeTo(validUntil, 2);
        // Aborted by the scheduler's one timer at the deadline: not before it, and not noticeably after.
        expect(r.lostAt.getTime()).to.be.at.least(validUntil);
        expect(r.lostAt.getTime() - validUntil).to.be.below(100);
      }
      // One timer ends them all: milliseconds apart at most, where leases kept each on its own would be a
      // renewal interval apart.
      expect(Math.max(...lostAt) - Math.min(...lostAt), "all at once").to.be.below(50);
    } finally {
      await slow.close();
      await proxy.close();
    }
  });

  it("waits in line on a session for longer than its TTL, the session kept renewed meanwhile", async () => {
    const ttl = 2000;
    const resource = uniqueResource("wait");
    const other = new FencekeeperClient({ servers: s.server.url });
    try {
      const first = await other.acquire(resource, { ttl });
      const waiting = fk.acquire(resource, { ttl, wait: true });
      await sleep(ttl + 1000);
      expect((await fk.describe(resource)).waiters).to.equal(1);
      await first.release();
      const lease = await waiting;
      expect(lease.held).to.equal(true);
      expect(lease.token.generation > first.token.generation).to.equal(true);
      expect(lease.token.leaseId).to.equal(seen("session-opened")[0].sessionId);
      expect(seen("session-ended")).to.deep.equal([]);
      expect(lease.validUntil.getTime() - Date.now()).to.be.above(ttl / 3);
    } finally {
      await other.close();
    }
  });

  it("a resource its own session holds: ResourceHeldError, or a wait in line behind itself, on a lease of its own", async () => {
    const resource = uniqueResource("twice");
    const first = await fk.acquire(resource, { ttl: 3000 });
    const err = await fk.acquire(resource, { ttl: 3000 }).catch((e) => e);
    expect(err).to.be.instanceOf(ResourceHeldError);
    expect(shownToOthers(err.holderToken!)).to.deep.equal(shownToOthers(first.token));
    const waiting = fk.acquire(resource, { ttl: 3000, wait: true });
    await sleep(200);
    await first.release();
    const second = await waiting;
    expect(second.token.generation > first.token.generation).to.equal(true);
    expect(second.token.leaseId, "not on the session, which took the resource once already").to.not.equal(first.token.leaseId);
  });
});

/** A session holder process (session-holder.ts): its JSON events in order, its stdin, SIGSTOP and SIGCONT. */
class SessionHolder {
  readonly process: ChildProcess;
  private readonly events: Record<string, any>[] = [];
  private notify?: () => void;

  constructor(url: string, ttl: number, resources: string[]) {
    const script = fileURLToPath(new URL("./session-holder.ts", import.meta.url));
    const [node, ...program] = nodeProgram(script);
    this.process = spawn(node, [...program, url, String(ttl), ...resources], { stdio: ["pipe", "pipe", "inherit"] });
    createInterface({ input: this.process.stdout! }).on("line", (line) => {
      this.events.push(JSON.parse(line));
      this.notify?.();
    });
  }

  seen(event: string): Record<string, any>[] {
    return this.events.filter((e) => e.event === event);
  }

  /** Waits until `count` events called `event` have arrived; returns them. */
  async wait(event: string, count: number, timeoutMs: number): Promise<Record<string, any>[]> {
    await eventually(() => this.seen(event).length >= count, `${count} "${event}" from the session holder`, timeoutMs);
    return this.seen(event);
  }

  send(command: string): void {
    this.process.stdin!.write(command + "\n");
  }

  kill(): void {
    this.process.kill("SIGCONT");
    this.process.kill("SIGKILL");
  }
}

describe("client: a paused holder on a session", () => {
  const s = useServer(["--metrics-listen", "off"]);
  let holder: SessionHolder | undefined;
  afterEach(() => holder?.kill());

  it("the article's timeline: B takes over while A is paused; A's leases are lost on resume before its next write, which the fence refuses", async () => {
    const ttl = 2000;
    const resource = uniqueResource("timeline");
    const other = uniqueResource("timeline-other");
    holder = new SessionHolder(s.server.url, ttl, [resource, other]);
    const [acquired] = await holder.wait("acquired", 2, 20_000);
    expect(holder.seen("acquired")[1].token.leaseId, "both on one session").to.equal(acquired.token.leaseId);
    holder.send(`put ${resource} doc from-A`);
    expect((await holder.wait("put", 1, 10_000))[0]).to.include({ ok: true });
    await holder.wait("renewed", 1, ttl);

    const b = new FencekeeperClient({ servers: s.server.url, sessions: true });
    try {
      holder.process.kill("SIGSTOP");
      const pausedAt = Date.now();
      // B waits in line; it gets the resource once etcd expires A's session, past A's TTL.
      const taken = await b.acquire(resource, { ttl, wait: 10_000 });
      const takenAt = Date.now();
      expect(BigInt(taken.token.generation) > BigInt(acquired.token.generation)).to.equal(true);
      await taken.put("doc", "from-B");

      holder.process.kill("SIGCONT");
      const resumedAt = Date.now();
      holder.send(`put ${resource} doc stale-A`); // through the lease: it looks first
      holder.send(`put-token ${resource} doc stale-A`); // with the token alone
      const checked = (await holder.wait("put", 2, 5000))[1];
      const [ignored] = await holder.wait("put-token", 1, 5000);
      const lost = await holder.wait("lost", 2, 5000);

      // Both leases of the session were lost together, at the session's deadline, seen as soon as A ran.
      expect(lost.map((l) => l.why)).to.deep.equal(["deadline", "deadline"]);
      const renewals = holder.seen("renewed");
      const last = renewals.at(-1)!;
      expect(renewals.every((r) => r.at < pausedAt + 50), "no renewal confirmed after the pause").to.equal(true);
      for (const l of lost) {
        expect(l.validUntil).to.be.closeTo(last.validUntil, 2);
        expect(l.lastSeenHeldAt, "no look found it held at or after validUntil").to.be.below(l.validUntil);
        expect(l.lostAt).to.be.at.least(l.validUntil);
        expect(l.at - resumedAt).to.be.below(1000);
      }
      expect(last.validUntil).to.be.closeTo(last.sentAt + ttl - (100 + ttl / 100), 2);
      expect(last.validUntil, "A stopped assuming its lease before B was granted").to.be.below(takenAt);
      // The signal fired before A's next write: the write through the lease never left A.
      expect(checked).to.include({ ok: false, local: true, why: "deadline" });
      expect(lost[0].at).to.be.at.most(checked.at);
      // The write that ignored the signal is refused by the fence.
      expect(ignored).to.include({ ok: false, reason: "STALE_TOKEN" });
      expect(ignored.fence).to.equal(String(taken.token.generation));
      expect(new TextDecoder().decode((await b.store.get(resource, "doc")).value)).to.equal("from-B");
    } finally {
      await b.close();
    }
  });
});
