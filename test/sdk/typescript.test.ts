// The TypeScript SDK (client/) through its test program (test/sdk/typescript/probe.ts): the SDK suite
// (sdk-suite.ts), as go.test.ts, python.test.ts and java.test.ts run the other libraries through it.
// Where TypeScript differs by design (docs/client-semantics.md): the signal given to acquire() bounds the
// wait and, once the lease is granted, its abort releases the lease (Go's context bounds the call alone,
// and a lease outlives it unless tied to one by LeaseContext); the scenario checks that. Batch is not a
// call of its own: the writes of one turn go out together in one Batch call, each answered alone.
import { expect } from "chai";
import { elect, hold, reasons, runScenario } from "./typescript-probe.js";
import { sdkSuite } from "./sdk-suite.js";

sdkSuite({
  title: "TypeScript SDK (client/) through the SDK suite",
  name: "TypeScript",
  tag: "ts-sdk",
  hold,
  elect,
  reasons: { column: "TypeScript", run: reasons, base: "FencekeeperError" },
  scenario: {
    title: "runs the conformance scenario through the SDK: leases of their own, on sessions, with a client certificate (mutual TLS), with a bearer JWT",
    run: runScenario,
    onSessions: true,
    everyRun: [
      /^ok acquire: the token verifies offline \(key \w+\)$/m,
      /^ok list: 2 entries, in key order$/m,
      /^ok multi-lock: all or nothing over 3 resources, refused whole while one is held, granted once it is free$/m,
    ],
    refused: /^FAIL UnauthenticatedError UNAUTHENTICATED /m,
    check({ own, sessions }) {
      expect(sessions!.output).to.match(/^ok acquire: generation \d+, lease \d+ \(a session\)$/m);
      expect(sessions!.output).to.match(/^ok not found: a renewal answered LEASE_NOT_FOUND ends the lease \(its session closed behind its back\)$/m);
      // TypeScript's cancellation, by design: the signal, once the lease is granted, releases it.
      expect(own.output).to.match(/^ok cancel: a cancelled wait fails CanceledError; the abort of the signal given to acquire\(\) releases the granted lease/m);
    },
  },
  lockDelay: {
    title: "AcquireOptions.lockDelay reaches the server, on a lease of its own also with ClientOptions.sessions; release leaves no delay",
    holders: [{}, { sessions: true }],
    expired: {
      title: "a lock-delayed lease lost at its deadline is left to expire, not released: the delay applies, describe() shows it, and an acquire throws LockDelayError",
    },
  },
  shared: {
    title: "two TypeScript holders acquire shared and co-hold; their writes are refused SHARED_TOKEN",
    holders: [{ holder: "ts-r1" }, { holder: "ts-r2" }],
    refused: { ok: false, reason: "SHARED_TOKEN", code: "INVALID_ARGUMENT", sent: true },
  },
  paused: {
    title: (on) => `a holder paused past its TTL (${on}): its signal aborts before its next write is sent, and a forced write is refused STALE_TOKEN`,
    sessions: [false, true],
    key: "greeting",
    writes: "queued",
    writeRefused: { ok: false, error: "LEASE_LOST", why: "deadline", sent: false },
    force: (key) => [`force ${key} from-A`, "force"],
    forceRefused: (fence) => ({ ok: false, error: "STALE_TOKEN", code: "FAILED_PRECONDITION", reason: "STALE_TOKEN", fence, sent: true }),
  },
  late: {
    title: "a renewal answered late (a delaying proxy) is loss, at validUntil, and later answers do not revive the lease",
    sentAt: true,
    writeAfter: { ok: false, error: "LEASE_LOST", sent: false },
  },
  failover: {
    titles: {
      killed: "replica failover: the server it uses is killed (SIGKILL), and the lease lives on through the other (same token, renewed, writable)",
      hung: "replica failover: the server it uses is hung (SIGSTOP), and the lease lives on through the other (same token, renewed, writable)",
    },
    renewalsAfter: (holder, failedAt) => holder.seen("renewed").filter((r) => r.sent_at >= failedAt),
    minRenewals: 3,
    checkState(state, granted) {
      expect(state.valid_until).to.be.above(granted.valid_until);
    },
    writeAccepted: {},
    async afterWrite(holder) {
      expect((await holder.command("state", "state")).held, "still held after the write").to.equal(true);
    },
  },
});
