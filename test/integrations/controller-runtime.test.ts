// controller-runtime's manager (sigs.k8s.io/controller-runtime) electing through sdk/go/resourcelock, its
// LeaderElectionResourceLockInterface, against real etcd and a real server, with no Kubernetes API
// server: two managers on one resource, each a process of sdk/go/resourcelock/controller-runtime-probe
// (built by scripts/setup-polyglot.sh). Each runs one runnable that needs leader election; it prints the
// token's generation when the manager starts it, and writes through the fenced store with that token. A
// leader paused (SIGSTOP) past its lease's TTL is replaced; resumed, its runnable's lock context ends with
// the loss, its write with its old token is refused, and its manager stops with an error, as
// controller-runtime's managers do on a lost leadership. A manager stopped (its context cancelled, with
// LeaderElectionReleaseOnCancel) hands over at once. Nothing contacts the API server of the managers'
// rest.Config.
import { expect } from "chai";
import { existsSync, readFileSync } from "node:fs";
import { ProbeProcess, ROOT, type ProbeEvent } from "../sdk/probe-process.js";
import { uniqueResource, useServer, within } from "../harness/suite.js";

const PROBE = `${ROOT}/.conformance/client-go/fk-controller-runtime-probe`;
// manager.Options: LeaseDuration is also the lease's TTL (whole seconds for etcd).
const LEASE_MS = 3000;
const RENEW_DEADLINE_MS = 2000;
const RETRY_MS = 500;
// Bounds for waiting on events: generous, as the verdicts come from the events, not from these.
const WAIT_MS = 20_000;

/** Fails, with what to do, when setup-polyglot.sh has not built the probe. */
function assertBuilt(): void {
  const missing = `${ROOT}/.conformance/controller-runtime.missing`;
  if (existsSync(missing)) throw new Error(`sdk/go/resourcelock's controller-runtime probe is not built: ${readFileSync(missing, "utf8").trim()}`);
  if (!existsSync(PROBE)) throw new Error("sdk/go/resourcelock's controller-runtime probe is not built: run bash scripts/setup-polyglot.sh (npm test runs it)");
}

const refusals = ["STALE_TOKEN", "LEASE_NOT_HELD"];

describe("controller-runtime's manager electing through sdk/go/resourcelock (LeaderElectionResourceLockInterface)", function () {
  this.timeout(60_000);
  const s = useServer();
  const running: ProbeProcess[] = [];

  function manager(resource: string, identity: string, extra: string[] = []): ProbeProcess {
    assertBuilt();
    const p = new ProbeProcess(`controller-runtime manager ${identity}`, PROBE, [
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
      ...extra,
    ]);
    running.push(p);
    return p;
  }

  afterEach(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill()));
  });

  /** Ends p's stdin (it stops its manager, if still running, and exits); resolves with its exit code. */
  async function endInput(p: ProbeProcess): Promise<number | null> {
    const alive = p.process.exitCode === null && p.process.signalCode === null;
    const exited = alive ? new Promise<boolean>((r) => p.process.once("exit", () => r(true))) : Promise.resolve(true);
    p.process.stdin!.end();
    const ended = await within(exited, WAIT_MS, false);
    expect(ended, `${p.process.spawnargs.join(" ")} exits at the end of its input`).to.equal(true);
    return p.process.exitCode;
  }

  /** a's manager elected, then b's a follower whose elector has read a's record. */
  async function electedPair(resource: string, extra: string[] = []) {
    const a = manager(resource, "manager-a", extra);
    const aElected = await a.next("elected", WAIT_MS);
    const b = manager(resource, "manager-b", extra);
    await b.next((e) => e.event === "observed-leader" && e.identity === "manager-a", WAIT_MS);
    expect(b.seen("elected"), "b elected while a leads").to.be.empty;
    return { a, b, aElected };
  }

  /** a paused until b is elected, b's write, then a resumed: b's election and write. */
  async function replaceWhilePaused(a: ProbeProcess, b: ProbeProcess, aElected: ProbeEvent) {
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
    return { pausedAt, resumedAt, bElected };
  }

  function nothingContactedTheApiServer(...ps: ProbeProcess[]): void {
    for (const p of ps) expect(p.seen("api-contacted"), "connections to the rest.Config's API server").to.be.empty;
  }

  it("a manager paused past its TTL is replaced; resumed, its runnable's context ends with the loss, its old token's write is refused, and the manager stops with leader election lost", async () => {
    const resource = uniqueResource("controller-runtime");
    const { a, b, aElected } = await electedPair(resource);
    const aWrite = await a.command("write k from-a", "write");
    expect(aWrite, "the leader's write with its token").to.include({ ok: true, generation: aElected.generation });

    const { pausedAt, resumedAt, bElected } = await replaceWhilePaused(a, b, aElected);
    const lost = await a.next("lost", WAIT_MS);
    expect(lost, "a's lock context ends with the SDK's LeaseLostError").to.include({ why: "deadline", generation: aElected.generation });
    const stale = await a.command("write k from-a-again", "write");
    expect(stale.ok, `a's write with its old token: ${JSON.stringify(stale)}`).to.equal(false);
    expect(refusals, `a's write refused: ${JSON.stringify(stale)}`).to.include(stale.reason);
    // client-go's renewals are refused by the lock from the loss on; after RenewDeadline of them the
    // elector stops leading, and controller-runtime's manager stops with an error.
    const stopped = await a.next("stopped", WAIT_MS);
    expect(stopped.error, `a's manager's Start returned: ${a.timeline(pausedAt)}`).to.equal("leader election lost");
    expect(lost.at, "the lock's context ended no later than the manager").to.be.at.most(stopped.at);
    expect(a.seen("elected"), "a is elected only once").to.have.length(1);
    expect(await endInput(a), "a exits with an error, as a program whose manager lost its leadership").to.equal(1);
    // b still leads: its write goes on.
    const bWrite = await b.command("write k from-b-again", "write");
    expect(bWrite).to.include({ ok: true, generation: bElected.generation });
    nothingContactedTheApiServer(a, b);
    console.log(
      `      paused a: b elected after ${Math.round(bElected.at - pausedAt)} ms; resumed a: lost after ${Math.round(lost.at - resumedAt)} ms, ` +
        `its manager stopped ${Math.round(stopped.at - lost.at)} ms later; a's write refused with ${stale.reason}`,
    );
  });

  it("a runnable that returns the loss stops its manager at the SDK's loss signal, not at client-go's", async () => {
    const resource = uniqueResource("controller-runtime");
    const { a, b, aElected } = await electedPair(resource, ["--stop-on-loss"]);
    const { resumedAt } = await replaceWhilePaused(a, b, aElected);
    const lost = await a.next("lost", WAIT_MS);
    expect(lost).to.include({ why: "deadline", generation: aElected.generation });
    const stopped = await a.next("stopped", WAIT_MS);
    // Start returns the runnable's error, the *fencekeeper.LeaseLostError, rather than controller-runtime's
    // "leader election lost", which would come only after RenewDeadline of refused renewals.
    expect(stopped.error, `a's manager's Start returned: ${a.timeline(resumedAt)}`).to.match(/^fencekeeper: the lease on .* \(generation \d+\) is lost/);
    expect(lost.at).to.be.at.most(stopped.at);
    const stale = await a.command("write k from-a-again", "write");
    expect(refusals, `a's write refused: ${JSON.stringify(stale)}`).to.include(stale.reason);
    expect(await endInput(a)).to.equal(1);
    nothingContactedTheApiServer(a, b);
    console.log(`      resumed a: lost after ${Math.round(lost.at - resumedAt)} ms, its manager stopped ${Math.round(stopped.at - lost.at)} ms later`);
  });

  it("a manager stopped with ReleaseOnCancel hands over at once: the other is elected before the lease's TTL, and the released token is refused", async () => {
    const resource = uniqueResource("controller-runtime");
    const { a, b, aElected } = await electedPair(resource);
    const releasedAt = Date.now();
    const released = await a.command("release", "released", WAIT_MS);
    expect(released, "a's lease was given back").to.include({ why: "released" });
    const ended = a.seen("ended");
    expect(ended, "a's runnable's context ended by the manager's stop").to.have.length(1);
    expect(a.seen("lost"), "a's lock context ended by the manager's stop, not by a loss").to.be.empty;
    const stopped = a.seen("stopped");
    expect(stopped, "a's manager's Start returned before the answer").to.have.length(1);
    expect(stopped[0].error, "a's manager stopped without an error").to.equal(undefined);

    const bElected = await b.next("elected", WAIT_MS);
    expect(BigInt(bElected.generation) > BigInt(aElected.generation), "b's generation is newer").to.equal(true);
    expect(bElected.at - releasedAt, "b elected within the TTL of the release (not at the lease's expiry)").to.be.below(LEASE_MS);
    const bWrite = await b.command("write k from-b", "write");
    expect(bWrite).to.include({ ok: true, generation: bElected.generation });
    const stale = await a.command("write k from-a-again", "write");
    expect(stale.ok, `a's write with its released token: ${JSON.stringify(stale)}`).to.equal(false);
    expect(refusals, `a's write refused: ${JSON.stringify(stale)}`).to.include(stale.reason);
    expect(await endInput(a), "a exits 0: its manager stopped cleanly").to.equal(0);

    const bReleased = await b.command("release", "released", WAIT_MS);
    expect(bReleased).to.include({ why: "released" });
    nothingContactedTheApiServer(a, b);
    console.log(`      a released; b elected ${Math.round(bElected.at - releasedAt)} ms after; a's write refused with ${stale.reason}`);
  });
});
