// The Go client library (sdk/go) through its test program (sdk/go/cmd/fk-sdk-probe): the SDK suite
// (sdk-suite.ts).
import { expect } from "chai";
import { clientsFor } from "../harness/clients.js";
import { sleep, uniqueResource } from "../harness/suite.js";
import { elect, hold, reasons, runConsumer, runScenario } from "./go-probe.js";
import { sdkSuite } from "./sdk-suite.js";

sdkSuite({
  title: "Go client library (sdk/go)",
  name: "Go",
  tag: "go-sdk",
  hold,
  elect,
  reasons: { column: "Go", run: reasons, base: "StatusError" },
  own(env) {
    it("a module of its own requires the library by its module path (sdk/go/consumer-test) and its ten-line program acquires, writes and releases", async () => {
      const r = await runConsumer(env.server.url, uniqueResource("go-sdk-user"));
      expect(r.code, r.output).to.equal(0);
      expect(r.output).to.match(/^ok generation \d+ fence \d+$/m);
    });
    it("the context given to Acquire bounds the call, not the lease: acquired with a 1 s context.WithTimeout cancelled at once, the lease is still held 3 s later", async () => {
      const resource = uniqueResource("go-sdk-ctx");
      const h = hold({ servers: [env.server.url], resource, ttlMs: 2000, acquireTimeoutMs: 1000 });
      try {
        const granted = await h.next("granted", 15_000);
        await sleep(3000); // past the context's 1 s, and past a 2 s TTL a released lease would not outlive
        const d = await clientsFor(env.server.url).lease.describe({ resource });
        expect(d.held, "held after the Acquire's context ended").to.equal(true);
        expect(String(d.token?.generation)).to.equal(granted.token.generation);
        expect(h.seen("lost")).to.deep.equal([]);
        expect((await h.command("state", "state")).held).to.equal(true);
      } finally {
        await h.kill();
      }
    });
  },
  scenario: {
    title: "runs the conformance scenario through the library: without credentials, with a client certificate (mutual TLS), with a bearer JWT",
    run: runScenario,
    onSessions: false,
    everyRun: [/^ok multi-lock: all or nothing over 3 resources, refused whole while one is held, granted once it is free$/m],
    refused: /Unauthenticated UNAUTHENTICATED/,
  },
  lockDelay: {
    title: "AcquireOptions.LockDelay reaches the server, on a lease of its own also on sessions (the default); Release leaves no delay",
    holders: [{ sessions: true }],
    expired: {
      title: "a lock-delayed lease lost at its deadline is left to expire, not released: the delay applies, Describe shows it, and an Acquire fails LockDelayError",
    },
  },
  shared: {
    title: "two Go holders acquire shared and co-hold; their writes are refused SHARED_TOKEN",
    holders: [{ holder: "go-r1" }, { holder: "go-r2" }],
    refused: { ok: false, reason: "SHARED_TOKEN", code: "InvalidArgument", sent: true },
  },
  paused: {
    title: (on) => `a holder paused past its TTL (${on}): its loss signal fires before its next write is sent, and a forced write is refused STALE_TOKEN`,
    sessions: [false, true],
    key: "greeting",
    writes: "queued",
    writeRefused: { ok: false, error: "LEASE_LOST", why: "deadline", sent: false },
    lossFirst: "decided",
    force: (key) => [`force ${key} from-A`, "force"],
    forceRefused: (fence) => ({ ok: false, error: "STALE_TOKEN", code: "FailedPrecondition", reason: "STALE_TOKEN", fence, sent: true }),
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
    renewalsAfter: (holder, failedAt) => holder.seen("renewed").filter((r) => r.at > failedAt),
    minRenewals: 4,
    writeAccepted: {},
    async afterWrite(holder) {
      expect((await holder.command("state", "state")).held, "still held after the write").to.equal(true);
    },
  },
});
