// client-go's leader election (leaderelection.RunOrDie, k8s.io/client-go) electing through
// sdk/go/resourcelock, against real etcd and a real server: two candidates, each a process of
// sdk/go/resourcelock/cmd/fk-client-go-probe (built by scripts/setup-polyglot.sh), which prints one JSON
// line per event of the elector and of the lock's context, and writes through the fenced store with the
// token of the last term it was elected for. A leader paused (SIGSTOP) past its lease's TTL is replaced;
// on resuming it learns of the loss from the lock's context before client-go's own renewal gives up, and
// its write with its old token is refused. A release hands the leadership over at once.
import { expect } from "chai";
import { existsSync, readFileSync } from "node:fs";
import { ProbeProcess, ROOT, runToEnd } from "../sdk/probe-process.js";
import { uniqueResource, useServer } from "../harness/suite.js";

const PROBE = `${ROOT}/.conformance/client-go/fk-client-go-probe`;
// client-go's LeaderElectionConfig: LeaseDuration is also the lease's TTL (whole seconds for etcd).
const LEASE_MS = 3000;
const RENEW_DEADLINE_MS = 2000;
const RETRY_MS = 500;
// Bounds for waiting on events: generous, as the verdicts come from the events, not from these.
const WAIT_MS = 20_000;

/** Fails, with what to do, when setup-polyglot.sh has not built the probe. */
function assertBuilt(): void {
  const missing = `${ROOT}/.conformance/client-go.missing`;
  if (existsSync(missing)) throw new Error(`sdk/go/resourcelock's probe is not built: ${readFileSync(missing, "utf8").trim()}`);
  if (!existsSync(PROBE)) throw new Error("sdk/go/resourcelock's probe is not built: run bash scripts/setup-polyglot.sh (npm test runs it)");
}

const refusals = ["STALE_TOKEN", "LEASE_NOT_HELD"];

describe("client-go leader election through sdk/go/resourcelock (fencekeeper as client-go's lock)", function () {
  this.timeout(60_000);
  const s = useServer();
  const running: ProbeProcess[] = [];

  function candidate(resource: string, identity: string): ProbeProcess {
    assertBuilt();
    const p = new ProbeProcess(`client-go candidate ${identity}`, PROBE, [
      "--server",
      s.server.url,
      "--resource",
      resource,
      "--identity",
      identity,
      "--lease-duration",
      `${LEASE_MS}ms`,
      "--renew-deadline",
      `${RENEW_DEADLINE_MS}ms`,
      "--retry-period",
      `${RETRY_MS}ms`,
    ]);
    running.push(p);
    return p;
  }

  afterEach(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill()));
  });

  /** a elected, then b a follower that has seen a lead. */
  async function electedPair(resource: string) {
    const a = candidate(resource, "candidate-a");
    const aElected = await a.next("elected", WAIT_MS);
    const b = candidate(resource, "candidate-b");
    await b.next((e) => e.event === "new-leader" && e.identity === "candidate-a", WAIT_MS);
    expect(b.seen("elected"), "b elected while a leads").to.be.empty;
    return { a, b, aElected };
  }

  it("a leader paused past its TTL is replaced; resumed, its context ends with the SDK's loss before client-go's, and its old token's write is refused", async () => {
    const resource = uniqueResource("client-go");
    const { a, b, aElected } = await electedPair(resource);
    const aWrite = await a.command("write k from-a", "write");
    expect(aWrite, "the leader's write with its token").to.include({ ok: true, generation: aElected.generation });

    const pausedAt = Date.now();
    a.pause();
    const bElected = await b.next("elected", WAIT_MS);
    // etcd expires a's lease no sooner than its TTL after the last renewal (renewals come every third of it).
    expect(bElected.at - pausedAt, "b elected only once a's lease could have expired").to.be.greaterThan(LEASE_MS / 2);
    expect(BigInt(bElected.generation) > BigInt(aElected.generation), "b's generation is newer").to.equal(true);
    const bWrite = await b.command("write k from-b", "write");
    expect(bWrite, "the new leader's write").to.include({ ok: true, generation: bElected.generation });

    const resumedAt = Date.now();
    a.resume();
    const lost = await a.next("lost", WAIT_MS);
    expect(lost, "a's lock context ends with the SDK's LeaseLostError").to.include({ why: "deadline", generation: aElected.generation });
    const stale = await a.command("write k from-a-again", "write");
    expect(stale.ok, `a's write with its old token: ${JSON.stringify(stale)}`).to.equal(false);
    expect(refusals, `a's write refused: ${JSON.stringify(stale)}`).to.include(stale.reason);
    const clientGoEnded = await a.next("client-go-ended", WAIT_MS);
    expect(lost.at, "the lock's context ended no later than client-go's").to.be.at.most(clientGoEnded.at);
    await a.next("stopped-leading", WAIT_MS);
    // a campaigns again (RunOrDie once more) and follows b.
    const returned = await a.next("returned", WAIT_MS);
    await a.next((e) => e.event === "new-leader" && e.identity === "candidate-b" && e.seq > returned.seq, WAIT_MS);
    expect(a.seen("elected"), "a is not elected again while b leads").to.have.length(1);
    console.log(
      `      paused a: b elected after ${Math.round(bElected.at - pausedAt)} ms; resumed a: lost after ${Math.round(lost.at - resumedAt)} ms, ` +
        `client-go's context ended ${Math.round(clientGoEnded.at - lost.at)} ms later; a's write refused with ${stale.reason}`,
    );
  });

  it("a release hands over at once: the other candidate is elected before the lease's TTL, and the released leader's token is refused", async () => {
    const resource = uniqueResource("client-go");
    const { a, b, aElected } = await electedPair(resource);
    const released = await a.command("release", "released", WAIT_MS);
    expect(released, "a's lease was given back").to.include({ why: "released" });
    await a.next("ended", WAIT_MS);
    expect(a.seen("lost"), "a's lock context ended by client-go's cancel, not by a loss").to.be.empty;

    const bElected = await b.next("elected", WAIT_MS);
    expect(BigInt(bElected.generation) > BigInt(aElected.generation), "b's generation is newer").to.equal(true);
    expect(bElected.at - released.at, "b elected within the TTL of the release (not at the lease's expiry)").to.be.below(LEASE_MS);
    const bWrite = await b.command("write k from-b", "write");
    expect(bWrite).to.include({ ok: true, generation: bElected.generation });
    const stale = await a.command("write k from-a-again", "write");
    expect(stale.ok, `a's write with its released token: ${JSON.stringify(stale)}`).to.equal(false);
    expect(refusals, `a's write refused: ${JSON.stringify(stale)}`).to.include(stale.reason);

    const bReleased = await b.command("release", "released", WAIT_MS);
    expect(bReleased).to.include({ why: "released" });
    console.log(`      a released; b elected ${Math.round(bElected.at - released.at)} ms after; a's write refused with ${stale.reason}`);
  });

  it("a user's program outside the repository's modules (client-go's example, its lock line changed) leads, writes under its token and steps down", async () => {
    assertBuilt();
    const resource = uniqueResource("client-go-user");
    const r = await runToEnd(`${ROOT}/.conformance/client-go/fk-client-go-user`, [s.server.url, resource, "user-1"]);
    expect(r.code, `its exit; stderr: ${r.stderr}`).to.equal(0);
    const elected = /^elected user-1 generation (\d+)$/m.exec(r.stdout);
    expect(elected, r.stdout).to.not.equal(null);
    expect(r.stdout).to.match(/^wrote revision \d+$/m);
    expect(r.stdout).to.match(/^stopped leading user-1$/m);
    // Stepping down released the lease: nobody holds the resource, and the fence is its generation.
    const d = await s.lease.describe({ resource });
    expect(d.held, "released on stepping down").to.equal(false);
    expect(d.fence).to.equal(BigInt(elected![1]));
  });
});
