// The Java integrations (sdk/java-integrations): ShedLock's LockingTaskExecutor and Spring Integration's
// LockRegistry.executeLocked, the frameworks' own code, running a job through fencekeeper-integrations in
// separate JVMs (the probe, Probe.java, built by scripts/setup-polyglot.sh) against real etcd and a real
// server. Each job writes through its lock's lease (CurrentLease) every 200 ms. Shown: one of two nodes
// holds the lock; paused (SIGSTOP) past its 2 s TTL, the other takes it and writes; resumed, the paused one
// has its first write refused (its lease found lost, or the fence refusing it), and the same write sent with
// its old token straight to the fenced store is refused (STALE_TOKEN); a finished job hands the lock over
// cleanly; and ShedLock's lockAtMostFor ends an overrunning job's lock while lockAtLeastFor keeps a finished
// one's. Last, a Spring application
// (sdk/java-integrations/consumer-test) configured as the frameworks' documentation shows, backend lines
// changed, runs its @SchedulerLock job and a registry lock, each writing with its token.
import { expect } from "chai";
import { existsSync, readFileSync } from "node:fs";
import { clientsFor } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { uniqueResource } from "../harness/suite.js";
import { ProbeProcess, ROOT, runToEnd, type ProbeEvent } from "../sdk/probe-process.js";

const JAR = "sdk/java-integrations/probe/target/fk-integrations-probe.jar";
/** A Spring application configured as the frameworks' documentation shows, with fencekeeper's backend lines. */
const USER_JAR = "sdk/java-integrations/consumer-test/target/fk-spring-user.jar";
const TTL_MS = 2000;
/** A JVM's start on a busy 2-core machine, and a first acquire. */
const STARTED_WITHIN_MS = 20_000;
/**
 * How long to wait for an event that must come (the verdicts are the events and their order, not this):
 * a JVM on a loaded 2-core machine has gone seconds without printing (a CI run waited 5 s in vain for a
 * node that tries every 200 ms).
 */
const EVENT_WITHIN_MS = 20_000;

/** Fails, with what to do, when setup-polyglot.sh has not built the probe. */
function assertBuilt(): void {
  const missing = `${ROOT}/.conformance/java-integrations.missing`;
  if (existsSync(missing)) throw new Error(`the Java integrations are not built: ${readFileSync(missing, "utf8").trim()}`);
  for (const jar of [JAR, USER_JAR]) {
    if (!existsSync(`${ROOT}/${jar}`)) throw new Error(`the Java integrations are not built (no ${jar}): run bash scripts/setup-polyglot.sh (npm test runs it)`);
  }
}

describe("Java integrations: ShedLock LockProvider and Spring Integration LockRegistry on fencekeeper", function () {
  this.timeout(90_000);
  let etcd: TestEtcd;
  let server: TestServer;
  const running: ProbeProcess[] = [];

  before(async function () {
    assertBuilt();
    etcd = await startEtcd();
    server = await startServer({ etcd: etcd.endpoint });
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill()));
  });
  after(async function () {
    this.timeout(30_000);
    await server?.stop();
    await etcd?.destroy();
  });

  function node(mode: "shedlock" | "spring", name: string, holder: string, extra: Record<string, number> = {}): ProbeProcess {
    const args = ["-jar", JAR, mode, "--server", server.url, "--name", name, "--holder", holder, "--ttl-ms", String(TTL_MS), "--key", "out"];
    for (const [k, v] of Object.entries(extra)) args.push(`--${k}`, String(v));
    const p = new ProbeProcess(`the ${mode} node ${holder}`, "java", args);
    running.push(p);
    return p;
  }

  /** What the fenced store holds under the lock's resource. */
  async function stored(resource: string, key = "out"): Promise<string> {
    const got = await clientsFor(server.url).store.get({ resource, key });
    return new TextDecoder().decode(got.value);
  }

  const gen = (e: ProbeEvent) => BigInt(e.generation);
  const putBy = (holder: string, ok: boolean) => (e: ProbeEvent) => e.event === "put" && e.holder === holder && e.ok === ok;

  /**
   * The pause and handover both frameworks share: a holds and writes; paused past its TTL, b takes over and
   * writes; a, resumed, is refused, and gives the lock up as its framework does (afterLoss); then b finishes
   * its job and a takes the lock back at once.
   */
  async function pauseAndHandOver(mode: "shedlock" | "spring", notHolding: string, afterLoss: (a: ProbeProcess) => Promise<void>): Promise<void> {
    const name = uniqueResource(`java-${mode}`);
    const a = node(mode, name, "a");
    const aStarted = await a.next("started", STARTED_WITHIN_MS);
    await a.next(putBy("a", true), EVENT_WITHIN_MS);
    const b = node(mode, name, "b");
    await b.next(notHolding, STARTED_WITHIN_MS); // b runs its loop, and does not hold the lock
    expect(b.seen("started"), "b started while a held the lock").to.have.length(0);

    a.pause();
    const pausedAt = Date.now();
    const bStarted = await b.next("started", 15_000);
    expect(gen(bStarted) > gen(aStarted), "b's token is newer").to.equal(true);
    // a's lease ends a TTL after its last renewal, which went out at most a third of the TTL before the pause.
    expect(bStarted.at - pausedAt, "b took over once a's lease ended, not before").to.be.greaterThan((TTL_MS * 2) / 3 - 250);
    await b.next(putBy("b", true), EVENT_WITHIN_MS);
    a.resume();

    // a's next write after the pause is refused: by its look at the lease (lost: DEADLINE), or, when the pause
    // came between that look and the call, by the fence. The write it sends anyway with its old token straight
    // to the fenced store is refused too.
    const timelines = () => `\na:\n${a.timeline(aStarted.at)}\nb:\n${b.timeline(aStarted.at)}`;
    const refused = await a.next(putBy("a", false), EVENT_WITHIN_MS);
    expect(refused.why === "DEADLINE" || ["STALE_TOKEN", "LEASE_NOT_HELD"].includes(refused.reason), `a's write after the pause${timelines()}`).to.equal(true);
    const forced = await a.next("forced-put", EVENT_WITHIN_MS);
    expect(forced, `a's write with its old token${timelines()}`).to.include({ ok: false, generation: aStarted.generation });
    expect(forced.reason).to.be.oneOf(["STALE_TOKEN", "LEASE_NOT_HELD"]);
    expect((await a.next("lost", EVENT_WITHIN_MS)).why).to.be.oneOf(["DEADLINE", "FENCED"]);
    await afterLoss(a);
    expect(await stored(aStarted.resource)).to.match(new RegExp(`^b ${bStarted.generation} `));

    // A clean handover: b's job finishes and b stops (so that its own next run cannot race a's), its lock is
    // given up, and a's next try takes it at once.
    const from = a.events.length;
    b.post("quit");
    const bLost = await b.next((e) => e.event === "lost" && e.generation === bStarted.generation, EVENT_WITHIN_MS);
    expect(bLost.why).to.equal("RELEASED");
    const aAgain = await a.next("started", 10_000, from);
    expect(gen(aAgain) > gen(bStarted)).to.equal(true);
    expect(aAgain.at - bLost.at, "a took the lock on its release, not at a TTL").to.be.lessThan(TTL_MS);
    await a.next(putBy("a", true), 5000, from);
    expect(await stored(aStarted.resource)).to.match(new RegExp(`^a ${aAgain.generation} `));
    console.log(`      ${mode}: a paused, b took over ${bStarted.at - pausedAt} ms later (TTL ${TTL_MS} ms); a's next write refused (${refused.why ?? refused.reason}), its old token's ${forced.reason}; handover on release ${aAgain.at - bLost.at} ms`);

    await b.next("closed", EVENT_WITHIN_MS);
    a.post("quit");
    await a.next("closed", EVENT_WITHIN_MS);
  }

  it("ShedLock: one node runs the job; paused past its TTL, the other takes it; the paused one's write is refused; handover on unlock", async () => {
    await pauseAndHandOver("shedlock", "skipped", async (a) => {
      // The executor's unlock of a lost lock does nothing; a's next runs are skipped while b holds it.
      await a.next("finished", EVENT_WITHIN_MS);
      const from = a.events.findIndex((e) => e.event === "finished");
      await a.next("skipped", 5000, from);
    });
  });

  it("Spring Integration: executeLocked on one node; paused past its TTL, the other gets the lock; unlock after the loss throws", async () => {
    await pauseAndHandOver("spring", "waiting", async (a) => {
      // As Spring's Redis and JDBC registries do for a lock that expired in their store.
      const failed = await a.next("unlock-failed", EVENT_WITHIN_MS);
      expect(failed.error).to.equal("ConcurrentModificationException");
    });
  });

  it("ShedLock: lockAtMostFor ends an overrunning job's lock; lockAtLeastFor keeps a finished job's until it has passed", async () => {
    // lockAtMostFor 3 s, a job that runs on: the lease is released at 3 s, and the other node runs the job.
    // Beside it, on a lock of its own, lockAtLeastFor 3 s and a job of one write: the lock stays taken for
    // 3 s from the job's start, so that neither node (the finished one included) runs it again before then.
    const most = uniqueResource("java-shedlock-most");
    const least = uniqueResource("java-shedlock-least");
    const a = node("shedlock", most, "a", { "at-most-ms": 3000 });
    const c = node("shedlock", least, "c", { "at-least-ms": 3000, "at-most-ms": 10_000, "task-ms": 0 });
    const aStarted = await a.next("started", STARTED_WITHIN_MS);
    const b = node("shedlock", most, "b", { "at-most-ms": 3000, "task-ms": 0 });
    await b.next("skipped", STARTED_WITHIN_MS);
    const aLost = await a.next("lost", EVENT_WITHIN_MS);
    expect(aLost.why).to.equal("RELEASED");
    // Not before lockAtMostFor; after it, as soon as the JVM's timer runs (seconds late on a loaded machine).
    expect(aLost.at - aStarted.created_at).to.be.within(3000, 3000 + 8000);
    const refused = await a.next(putBy("a", false), EVENT_WITHIN_MS);
    expect(refused.why).to.equal("RELEASED");
    const bStarted = await b.next("started", EVENT_WITHIN_MS);
    expect(gen(bStarted) > gen(aStarted)).to.equal(true);

    const cStarted = await c.next("started", STARTED_WITHIN_MS);
    const cFinished = await c.next("finished", EVENT_WITHIN_MS);
    expect(cFinished.at, "the job finished well within lockAtLeastFor").to.be.lessThan(cStarted.created_at + 2000);
    const next = await c.next((e) => e.event === "started" && e.seq > cStarted.seq, EVENT_WITHIN_MS);
    const released = c.events.find((e) => e.event === "lost" && e.generation === cStarted.generation)!;
    expect(released.why).to.equal("RELEASED");
    expect(released.at - cStarted.created_at).to.be.within(3000, 3000 + 8000);
    expect(next.at).to.be.at.least(cStarted.created_at + 3000);
    expect(c.events.some((e) => e.event === "skipped" && e.at > cFinished.at && e.at < released.at), "runs skipped meanwhile").to.equal(true);
    for (const p of [a, b, c]) p.post("quit");
    await Promise.all([a, b, c].map((p) => p.next("closed", EVENT_WITHIN_MS)));
  });

  it("a Spring application configured as ShedLock's and Spring Integration's documentation show, backend lines changed: its @SchedulerLock job and its LockRegistry lock write with their tokens", async () => {
    // sdk/java-integrations/consumer-test: @EnableScheduling, @EnableSchedulerLock, a LockProvider bean and
    // a LockRegistry bean; a @Scheduled @SchedulerLock job run twice, then obtain/lock/unlock.
    const r = await runToEnd("java", ["-jar", USER_JAR, server.url], 75_000);
    const output = `${r.stdout}${r.stderr}`;
    expect(r.code, output).to.equal(0);
    const scheduled = [...r.stdout.matchAll(/^scheduled generation (\d+)$/gm)].map((m) => BigInt(m[1]));
    const registry = [...r.stdout.matchAll(/^registry generation (\d+)$/gm)].map((m) => m[1]);
    expect(scheduled.length, output).to.be.at.least(2);
    for (let i = 1; i < scheduled.length; i++) expect(scheduled[i] > scheduled[i - 1], "each run took the lock anew").to.equal(true);
    expect(registry, output).to.have.length(1);
    expect(scheduled.map(String)).to.include((await stored("shedlock/report", "latest")).replace(/^report /, ""));
    expect(await stored("spring/orders", "latest")).to.equal(`orders ${registry[0]}`);
    console.log(`      Spring application: ${scheduled.length} scheduled runs (generations ${scheduled.join(", ")}), registry lock generation ${registry[0]}`);
  });
});
