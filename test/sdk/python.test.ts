// The Python library (sdk/python) through its test program (sdk/python/tests/probe.py): its own unit
// tests, then the SDK suite (sdk-suite.ts), with leases of their own and on sessions, through threads
// and through fencekeeper.aio.
import { expect } from "chai";
import { elect, runElectAio, hold, reasons, runConsumer, runOptions, runScenario, runUnitTests } from "./python-probe.js";
import { uniqueResource } from "../harness/suite.js";
import { sdkSuite } from "./sdk-suite.js";

sdkSuite({
  title: "sdk/python: the Python library against real servers",
  name: "Python",
  tag: "py-sdk",
  hold,
  elect,
  state: ["status", "status"],
  reasons: { column: "Python", run: reasons, base: "FencekeeperError" },
  own(env) {
    it("installed the usual way (its wheel, with pip, in a fresh venv), a user's ten-line program acquires, writes and releases", async () => {
      const r = await runConsumer(env.server.url, uniqueResource("py-sdk-user"));
      expect(r.code, r.output).to.equal(0);
      expect(r.output).to.match(/^ok generation \d+ fence \d+ from .*\/\.conformance\/venv-user\/lib\/.*site-packages\/fencekeeper\/__init__\.py$/m);
    });
    it("passes its unit tests (deadlines, error mapping, backoff, tokens, token verification, write coalescing, acquire options)", async () => {
      const r = await runUnitTests();
      expect(r.code, r.output).to.equal(0);
      expect(r.output).to.match(/^Ran \d+ tests/m);
    });
    it("fencekeeper.aio's election and semaphore helpers: campaign, leader, proclaim, lead in a task (elected at a resign, stopped by cancelling it), observe_leaders, semaphore", async () => {
      const r = await runElectAio(env.server.url, uniqueResource("py-sdk-elect-aio"));
      expect(r.code, r.output).to.equal(0);
      expect(r.output).to.match(/^ok released$/m);
    });
    it("AcquireOptions through every entry point (threads and fencekeeper.aio): the scoped lease() sends value, max_holders and preempt; semaphore and campaign wait by default and keep an explicit wait=False", async () => {
      const r = await runOptions(env.server.url, uniqueResource("py-sdk-options"));
      expect(r.code, r.output).to.equal(0);
      expect(r.output).to.match(/^ok lease\(\) sends preempt: granted over the holder at once$/m);
      expect(r.output).to.match(/^ok campaign refuses shared, max_holders and a value in its options: InvalidArgumentError, nothing sent$/m);
      expect(r.output).to.match(/^ok aio: the cancelled waits left nobody in line$/m);
    });
  },
  scenario: {
    title: "runs the conformance scenario through the library: leases of their own, on sessions, with a client certificate, with a bearer JWT",
    run: runScenario,
    onSessions: true,
    everyRun: [/^ok multi-lock: all or nothing over 3 resources, refused whole while one is held, granted once it is free$/m],
    refused: /^FAIL UnauthenticatedError UNAUTHENTICATED UNAUTHENTICATED: /m,
    check({ own, sessions }) {
      expect(own.output).to.match(/^ok scoped: released after the block raised$/m);
      expect(sessions!.output).to.match(/^ok sessions: two leases on one session, released one by one and by close\(\)$/m);
    },
  },
  lockDelay: {
    title: "acquire(lock_delay=...) and the scoped lease(lock_delay=...) reach the server (on fencekeeper.aio too), on a lease of its own also on sessions (the default); release leaves no delay",
    holders: [{ asyncio: false }, { asyncio: true, scoped: true }, { scoped: true }, { sessions: true }],
    expired: {
      title: "a lock-delayed lease lost at its deadline (fencekeeper.aio) is left to expire, not released: the delay applies, describe() shows it, and an acquire raises LockDelayError",
      hold: { asyncio: true },
    },
  },
  shared: {
    title: "two Python holders acquire shared through the scoped lease(shared=True), threads and fencekeeper.aio, and co-hold; their writes are refused SHARED_TOKEN",
    holders: [{ scoped: true }, { asyncio: true, scoped: true }],
    refused: { sent: true, ok: false, reason: "SHARED_TOKEN", code: "INVALID_ARGUMENT" },
  },
  paused: {
    title: (on) => `a holder paused past its TTL (${on}) sees the loss before its next write is sent; a forced write is refused STALE_TOKEN`,
    sessions: [false, true],
    key: "owner",
    writes: "queued",
    lostAlso: { event_set: true },
    writeRefused: { sent: false, ok: false, code: "LEASE_LOST", why: "deadline" },
    force: (key) => [`force-write ${key} a`, "write"],
    forceRefused: () => ({ forced: true, sent: true, ok: false, code: "FAILED_PRECONDITION", reason: "STALE_TOKEN" }),
  },
  late: {
    group: "renewal answers held back past the deadline (fencekeeper.aio)",
    title: "are loss at validUntil, and the answers that come later change nothing",
    hold: { asyncio: true },
    sentAt: false,
    writeAfter: { sent: false, code: "LEASE_LOST" },
  },
  failover: {
    group: "replica failover",
    titles: {
      killed: "the replica carrying the stream is killed (SIGKILL): the lease lives on through the other, same token, and takes writes",
      hung: "the replica carrying the stream hangs (SIGSTOP): an unanswered renewal moves the stream to the other in time",
    },
    renewalsAfter: (holder, failedAt) => holder.seen("renewed").filter((r) => r.sent_at >= failedAt),
    minRenewals: 4,
    checkState(state, granted) {
      expect(state.token).to.deep.equal(granted.token);
    },
    writeAccepted: { sent: true },
  },
});
