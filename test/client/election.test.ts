// The SDK's election helpers against a real server: campaign, leader, observeLeaders, proclaim, resign;
// lead() never running two onElected at once in one process; and a leader process really paused
// (SIGSTOP) past its TTL while a follower takes over: its signal aborts before it can act again, and
// its writes and proclaims are refused.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { FencekeeperClient, InvalidArgumentError, LeaseLostError, type Leader, type LeaderChange, type Leadership } from "../../client/index.js";
import { nodeProgram } from "../harness/programs.js";
import { eventually, sleep, uniqueResource, useServer } from "../harness/suite.js";

const LEADER = fileURLToPath(new URL("./leader-process.ts", import.meta.url));
type Event = Record<string, any> & { event: string; at: number };

/** A leader-process.ts: its events in order, its stdin, and signals to pause it. */
class LeaderProcess {
  readonly process: ChildProcess;
  readonly events: Event[] = [];
  private readonly exited: Promise<void>;

  constructor(url: string, name: string, resource: string, ttlMs: number) {
    const [node, ...program] = nodeProgram(LEADER);
    this.process = spawn(node, [...program, url, name, resource, String(ttlMs)], { stdio: ["pipe", "pipe", "inherit"] });
    this.exited = new Promise((resolve) => this.process.once("exit", () => resolve()));
    createInterface({ input: this.process.stdout! }).on("line", (line) => this.events.push(JSON.parse(line)));
  }

  /** The n-th event called name (0: the first), once it has come. */
  async nth(name: string, n: number, timeoutMs: number): Promise<Event> {
    let found: Event | undefined;
    await eventually(() => (found = this.events.filter((e) => e.event === name)[n]) !== undefined, `the leader process reports ${name} #${n}`, timeoutMs);
    return found!;
  }

  send(command: string): void {
    this.process.stdin!.write(command + "\n");
  }

  async kill(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGCONT");
      this.process.kill("SIGKILL");
    }
    await this.exited;
  }
}

const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b ?? new Uint8Array(0));

describe("client: election", () => {
  const s = useServer(["--metrics-listen", "off"]);
  const clients: FencekeeperClient[] = [];
  const client = (holder: string) => {
    const c = new FencekeeperClient({ servers: s.server.url, holder });
    clients.push(c);
    return c;
  };
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  /** Every change observeLeaders() gives, until stop(). */
  function follow(c: FencekeeperClient, resource: string) {
    const seen: LeaderChange[] = [];
    const stop = new AbortController();
    const done = (async () => {
      for await (const ch of c.observeLeaders(resource, { signal: stop.signal })) seen.push(ch);
    })();
    return {
      seen,
      views: () => seen.map((ch) => (ch.leader ? `${ch.leader.holder}=${text(ch.leader.value)}` : "none")),
      stop: async () => {
        stop.abort();
        await done;
      },
    };
  }

  it("campaign refuses shared, maxHolders and a value in its options (left out of its type, passed from JavaScript): InvalidArgumentError, nothing sent", async () => {
    const resource = uniqueResource("campaign-refused");
    const a = client("a");
    for (const o of [{ shared: true }, { maxHolders: 2 }, { value: "v" }]) {
      const e = await a.campaign(resource, "a", o as never).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e, JSON.stringify(o)).to.be.instanceOf(InvalidArgumentError);
    }
    expect((await a.describe(resource)).waiters).to.equal(0);
    expect((await a.describe(resource)).held).to.equal(false);
  });

  it("campaign, leader, proclaim, resign: followers see each leader and value in order", async () => {
    const resource = uniqueResource("campaign");
    const [a, b, watcher] = [client("a"), client("b"), client("watcher")];
    const f = follow(watcher, resource);
    await eventually(() => f.seen.length === 1, "the first change (nobody leads)");
    const la = await a.campaign(resource, "a:1", { ttl: 5000 });
    expect(la.leading).to.equal(true);
    const now = await watcher.leader(resource);
    expect(now?.holder).to.equal("a");
    expect(text(now?.value)).to.equal("a:1");
    expect(now?.token.generation).to.equal(la.token.generation);
    const electing = b.campaign(resource, "b:1", { ttl: 5000 });
    await eventually(async () => (await watcher.describe(resource)).waiters === 1, "b waits to be elected");
    await la.proclaim("a:2");
    await la.resign();
    expect(la.signal.aborted).to.equal(true);
    const lb = await electing;
    expect(lb.token.generation > la.token.generation).to.equal(true);
    // A resigned leadership cannot proclaim: it is checked locally first.
    let err: unknown;
    await la.proclaim("late").catch((e) => (err = e));
    expect(err).to.be.instanceOf(LeaseLostError);
    await eventually(() => f.seen.length >= 4, "every change seen");
    expect(f.views()).to.deep.equal(["none", "a=a:1", "a=a:2", "b=b:1"]);
    await lb.resign();
    await eventually(() => f.seen.length >= 5, "nobody leads");
    expect(f.views()[4]).to.equal("none");
    expect(await watcher.leader(resource)).to.equal(undefined);
    await f.stop();
  });

  it("lead(): two loops in one process never run onElected at once, and each campaigns again after a loss", async () => {
    const resource = uniqueResource("lead");
    const [a, b] = [client("a"), client("b")];
    const terms: { who: string; start: number; end?: number }[] = [];
    const stop = new AbortController();
    const newLeaders: (Leader | undefined)[] = [];
    const deposed: string[] = [];
    /** Each term resigns after a moment, then keeps running 500 ms past its loss, ignoring its signal. */
    const loop = (c: FencekeeperClient, who: string) =>
      c.lead(
        resource,
        {
          async onElected(signal, token, leadership: Leadership) {
            const term: { who: string; start: number; end?: number } = { who, start: Date.now() };
            terms.push(term);
            expect(signal.aborted).to.equal(false);
            expect(token.generation).to.equal(leadership.token.generation);
            await sleep(100);
            await leadership.resign();
            expect(signal.aborted).to.equal(true);
            await sleep(500);
            term.end = Date.now();
          },
          onDeposed: (e) => deposed.push(`${who}:${e.why}`),
          onNewLeader: who === "a" ? (l) => newLeaders.push(l) : undefined,
        },
        { ttl: 5000, value: who, signal: stop.signal },
      );
    const running = [loop(a, "a"), loop(b, "b")];
    await eventually(() => terms.filter((t) => t.end !== undefined).length >= 4, "four terms over", 20_000);
    stop.abort();
    await Promise.all(running);
    const over = terms.filter((t) => t.end !== undefined);
    for (let i = 1; i < over.length; i++) expect(over[i].start, `term ${i} starts after term ${i - 1} ends`).to.be.at.least(over[i - 1].end!);
    expect(new Set(over.map((t) => t.who)).size, "both loops were elected").to.equal(2);
    expect(deposed.filter((d) => d.endsWith(":released")).length).to.be.at.least(4);
    expect(newLeaders.some((l) => l?.holder === "a") && newLeaders.some((l) => l?.holder === "b")).to.equal(true);
  });

  it("lead(): an onElected that throws resigns, and the loop campaigns again", async () => {
    const resource = uniqueResource("throws");
    const a = client("a");
    const stop = new AbortController();
    const generations: bigint[] = [];
    const deposed: string[] = [];
    const running = a.lead(
      resource,
      {
        async onElected(signal, token) {
          generations.push(token.generation);
          if (generations.length === 1) throw new Error("the leader's work failed");
          await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        },
        onDeposed: (e) => deposed.push(e.why),
      },
      { ttl: 5000, value: "a", signal: stop.signal },
    );
    await eventually(() => generations.length === 2, "elected again after the failure");
    expect(generations[1] > generations[0]).to.equal(true);
    expect(deposed).to.deep.equal(["released"]);
    expect((await a.leader(resource))?.token.generation).to.equal(generations[1]);
    stop.abort();
    await running;
    expect(deposed).to.deep.equal(["released", "canceled"]);
    expect(await a.leader(resource)).to.equal(undefined);
  });

  describe("leadership passed on by expiry and by resign", () => {
    let leaderA: LeaderProcess | undefined;
    afterEach(async () => {
      await leaderA?.kill();
    });

    it("three observers see the same leaders in the same order", async () => {
      const resource = uniqueResource("passed-on");
      const observers = [client("o1"), client("o2"), client("o3")].map((c) => follow(c, resource));
      await eventually(() => observers.every((o) => o.seen.length === 1), "each observer's first change");
      leaderA = new LeaderProcess(s.server.url, "A", resource, 2000);
      await leaderA.nth("elected", 0, 15_000);
      const [b, c] = [client("B"), client("C")];
      const electingB = b.campaign(resource, "B-address", { ttl: 5000 });
      await eventually(async () => (await b.describe(resource)).waiters === 1, "B waits");
      const electingC = c.campaign(resource, "C-address", { ttl: 5000 });
      await eventually(async () => (await b.describe(resource)).waiters === 2, "C waits behind B");
      // A dies without a word: its lease expires, and B is elected.
      await leaderA.kill();
      const lb = await electingB;
      await lb.proclaim("B-address-2");
      await lb.resign();
      const lc = await electingC;
      await lc.resign();
      const want = ["none", "A=A-address", "B=B-address", "B=B-address-2", "C=C-address", "none"];
      await eventually(() => observers.every((o) => o.seen.length >= want.length), "every observer saw every change", 15_000);
      for (const o of observers) expect(o.views()).to.deep.equal(want);
      const generations = observers.map((o) => o.seen.map((ch) => ch.leader?.token.generation ?? 0n));
      expect(generations[1]).to.deep.equal(generations[0]);
      expect(generations[2]).to.deep.equal(generations[0]);
      await Promise.all(observers.map((o) => o.stop()));
    });
  });

  describe("a leader process paused past its TTL", () => {
    let leaderA: LeaderProcess | undefined;
    afterEach(async () => {
      await leaderA?.kill();
    });

    it("a follower is elected; the old leader's signal aborts before it acts again; its write and proclaim are refused", async () => {
      const ttl = 2000;
      const resource = uniqueResource("paused-leader");
      leaderA = new LeaderProcess(s.server.url, "A", resource, ttl);
      const electedA = await leaderA.nth("elected", 0, 15_000);
      // A follower in this process, leading when A cannot.
      const b = client("B");
      const stopB = new AbortController();
      let electedB: { at: number; generation: bigint; leadership: Leadership } | undefined;
      const leadingB = b.lead(
        resource,
        {
          async onElected(signal, token, leadership) {
            electedB = { at: Date.now(), generation: token.generation, leadership };
            await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
          },
        },
        { ttl: 5000, value: "B-address", signal: stopB.signal },
      );
      await eventually(async () => (await b.describe(resource)).waiters === 1, "B campaigns");
      // Past a renewal, so that A's deadline is a renewal's.
      await sleep(ttl / 2);

      leaderA.process.kill("SIGSTOP");
      await eventually(() => electedB !== undefined, "B is elected once A's lease expires", ttl + 8000);
      // The new leader writes: the fence moves past A's generation.
      await electedB!.leadership.lease.put("k", "from-B");
      expect(text((await b.leader(resource))?.value)).to.equal("B-address");
      await sleep(300);
      const resumedAt = Date.now();
      leaderA.process.kill("SIGCONT");

      const aborted = await leaderA.nth("aborted", 0, 5000);
      // A's signal aborted at its deadline, which came before B could be granted; A acted for the last
      // time before that deadline, and not once after it resumed.
      expect(aborted.why).to.equal("deadline");
      expect(aborted.validUntil).to.be.below(electedB!.at);
      expect(aborted.lastActedAt).to.be.below(aborted.validUntil);
      expect(aborted.lastActedAt).to.be.below(resumedAt);
      expect(aborted.at - resumedAt, "the loss is seen as soon as A runs").to.be.below(1000);
      expect((await leaderA.nth("deposed", 0, 5000)).why).to.equal("deadline");
      const generationA = BigInt(electedA.token.generation);
      expect(electedB!.generation > generationA).to.equal(true);

      // A program that ignored its signal: its write under A's token, and its proclaim, are refused.
      leaderA.send("put-token k from-A");
      const put = await leaderA.nth("put-token", 0, 10_000);
      expect(put).to.include({ ok: false, reason: "STALE_TOKEN" });
      leaderA.send("proclaim A-again");
      const proclaimed = await leaderA.nth("proclaim", 0, 10_000);
      expect(proclaimed.ok).to.equal(false);
      const got = await b.store.get(resource, "k");
      expect(text(got.value)).to.equal("from-B");
      expect(text((await b.leader(resource))?.value)).to.equal("B-address");

      // A campaigns again: once B stops leading, A is elected with a newer generation.
      stopB.abort();
      await leadingB;
      const again = await leaderA.nth("elected", 1, 15_000);
      expect(BigInt(again.token.generation) > electedB!.generation).to.equal(true);
      leaderA.send("stop");
      await leaderA.nth("exited", 0, 15_000);
    });
  });
});
