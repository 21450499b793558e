// The Java client library (sdk/java) through its probe (sdk/java/probe): the SDK suite (sdk-suite.ts),
// and the library's own promises. A holder's worker thread writes through its lease all along.
import { expect } from "chai";
import { elect, generatedTypesExposed, hold, reasons, runChecks, runConsumer } from "./java-probe.js";
import { sdkSuite } from "./sdk-suite.js";
import { uniqueResource } from "../harness/suite.js";

sdkSuite({
  title: "sdk/java: the Java client library against real servers",
  name: "Java",
  tag: "java-sdk",
  hold,
  elect,
  grantedWithinMs: 20_000,
  // Writes of the worker thread answer "put" too: the command's answer is the one from stdin.
  write: (key, value) => [`put ${key} ${value}`, (e) => e.event === "put" && e.source === "stdin"],
  lockDelayError: "LockDelayException",
  reasons: { column: "Java", run: reasons, base: "FencekeeperException" },
  own(env) {
    it("a separate Maven project, built against the jar installed into a throwaway local repository, runs a ten-line program: acquire, write, release", async () => {
      const r = await runConsumer(env.server.url, uniqueResource("java-sdk-user"));
      expect(r.code, r.output).to.equal(0);
      expect(r.output).to.match(/^ok generation \d+ fence \d+$/m);
    });
    it("exposes no generated protobuf class in its public API: tokens, fence modes, txn ops, descriptions, holders, events and exceptions are the library's own types (the deprecated overloads that take the generated ones aside)", async () => {
      expect(await generatedTypesExposed()).to.deep.equal([]);
    });
    it("keeps its own promises: release, fail fast, wait at most, cancel by future or interrupt, withLease, fenced writes, coalesced writes whose writers cancel, are interrupted or pass their deadline, against a server without Batch, and writes cut off by a server that went away", async () => {
      const r = await runChecks("semantics", env.server.url, uniqueResource("java-sdk-semantics"));
      expect(r.code, `a check failed:\n${r.output}`).to.equal(0);
      expect(r.output.match(/^ok /gm)).to.have.length(10);
      expect(r.output).to.match(/^ok coalesced writes: a writer's cancel, interrupt or deadline ends its own write only: \d+ of 288 committed, /m);
      expect(r.output).to.match(/^ok against a server without Batch: one Batch tried \(UNIMPLEMENTED\), then every write alone/m);
      expect(r.output).to.match(/^ok a server gone while writes are on it: each cut-off write is an UnavailableException, none CanceledException /m);
    });
  },
  scenario: {
    title: "runs the conformance scenario of SCENARIO.md through the library: own leases, on sessions, with a client certificate (mutual TLS), with a bearer JWT",
    run: (server, resource, o) => runChecks("scenario", server, resource, o),
    onSessions: true,
    everyRun: [
      /^ok acquire: the token verifies offline \(key \w+\)$/m,
      /^ok list: 2 entries, in key order$/m,
      /^ok multi-lock: all or nothing over 3 resources, refused whole while one is held, granted once it is free$/m,
    ],
    refused: /^FAIL UnauthenticatedException UNAUTHENTICATED /m,
    check({ sessions }) {
      const out = sessions!.output;
      expect(out).to.match(/^ok acquire: generation \d+, lease \d+ \(a session\)$/m);
      expect(out).to.match(/^ok sessions: four acquisitions at once share one session$/m);
      expect(out).to.match(/^ok sessions: a second acquisition of a resource the session holds fails fast: RESOURCE_HELD$/m);
      expect(out).to.match(/^ok sessions: withOwnLease\(true\) takes a lease of its own \(acquire, acquireAll\); a campaign takes one unless withOwnLease\(false\)$/m);
      expect(out).to.match(/^ok campaign refuses shared, maxHolders and a value in its options: InvalidArgumentException, nothing sent$/m);
      expect(out).to.match(/^ok sessions: an Acquire on a session gone behind the client's back loses it with its leases, and is tried again on a new one$/m);
      expect(out).to.match(/^ok sessions: close\(\) closes the sessions with their leases$/m);
    },
  },
  lockDelay: {
    title: "AcquireOptions.withLockDelay reaches the server, on a lease of its own also with sessions; release leaves no delay",
    holders: [{ sessions: true }],
    expired: {
      title: "a lock-delayed lease lost at its deadline is left to expire, not released: the delay applies, describe() shows it, and an acquire throws LockDelayException",
    },
  },
  shared: {
    title: "two Java holders acquire shared and co-hold; their writes are refused SHARED_TOKEN",
    holders: [{}, {}],
    refused: { ok: false, code: "INVALID_ARGUMENT", reason: "SHARED_TOKEN" },
  },
  paused: {
    title: (on) => `a holder paused past its TTL (${on}) sees its loss before its next write is sent, and its old token is refused`,
    sessions: [false, true],
    key: "worker", // the key the worker thread writes
    writes: "worker",
    check({ lost, write, holder, resumedAt, bAcquiredAt }) {
      expect(lost.why).to.equal("DEADLINE");
      // Safe: the holder stopped assuming its lease before etcd let it go and B was granted.
      expect(lost.valid_until).to.be.below(bAcquiredAt);
      expect(lost.last_seen_held_at).to.be.below(lost.valid_until);
      expect(lost.at).to.be.at.least(lost.valid_until);
      if (write.attempted_at >= resumedAt) {
        // The loss was decided first, and the worker's next write was refused by the library, not sent. (Its
        // line may come before the listener's: the worker's look and the keep-alive thread's timer race to
        // see the deadline passed, and the listener runs on the thread that noticed it.)
        expect(write).to.include({ ok: false, local: true, why: "DEADLINE" });
        expect(lost.lost_at).to.be.at.most(write.at);
      } else {
        // The write the worker had begun when SIGSTOP arrived: the library looked at the lease before the pause
        // and sent the write after it, and the fence refused it (B had written). Seen in CI on a loaded machine.
        expect(write).to.include({ ok: false, code: "FAILED_PRECONDITION", reason: "STALE_TOKEN" });
      }
      // A stopped process sends nothing, so what counts is what it sent once resumed. (Not "since the pause": a
      // write the worker began in the millisecond SIGSTOP arrived was sent while the lease was still held,
      // committed then, and its answer read only after the resume; seen once in CI.)
      const sentAfterResume = holder.seen("put").filter((l) => l.ok === true && l.attempted_at >= resumedAt);
      expect(sentAfterResume, "writes sent by the holder after its pause").to.deep.equal([]);
    },
    force: (key) => [`put-token ${key} stale`, "put-token"],
    forceRefused: (fence) => ({ ok: false, code: "FAILED_PRECONDITION", reason: "STALE_TOKEN", fence }),
  },
  late: {
    group: "through a delaying proxy",
    title: "a renewal answered after validUntil is loss, and later answers do not revive the lease",
    why: "DEADLINE",
    withinMs: 5,
    sentAt: true,
  },
  failover: {
    group: "replicas on one etcd",
    titles: {
      killed: "the replica the client uses is killed (SIGKILL): the stream moves to the other and the lease lives on",
      hung: "the replica the client uses hangs (SIGSTOP): an unanswered renewal moves the stream to the other in time",
    },
    renewalsAfter: (holder, failedAt) => holder.seen("renewed").filter((l) => l.confirmed_at >= failedAt),
    minRenewals: 3,
    writeAccepted: {},
  },
});
