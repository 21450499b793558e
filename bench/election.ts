// Leader election (issue 24): the SDK's campaign() beside etcd3's own election() helper, in one run on
// one etcd. Three rows, each one campaigner or two at a time:
//   acquire-to-leader   a campaign on a resource nobody leads: from the call to elected (then resigned)
//   resign-to-leader    the leader resigns while a follower campaigns: from the resign to the follower elected
//   crash-to-leader     the leader's process is killed (SIGKILL) while a follower campaigns: from the kill
//                       to the follower elected; bounded below by what the leader's TTL had left
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Etcd3 } from "etcd3";
import { FencekeeperClient } from "../client/index.js";
import { bounded, percentile, sleep } from "./measure.js";
import { ms, ratio, Table } from "./report.js";
import type { Flags, Scenario } from "./scenario.js";

const TTL_SECONDS = 10;
const CRASH_TTL_SECONDS = 2;
const CRASH_ROUNDS = 3;
const LEADER = fileURLToPath(new URL("./election-leader.ts", import.meta.url));

interface Latencies {
  samples: number;
  p50Ms: number;
  p99Ms: number;
}

const summary = (xs: number[]): Latencies => {
  const sorted = [...xs].sort((a, b) => a - b);
  return { samples: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
};

/** Runs round() back to back for `seconds` (at least 3 rounds): each round's measured ms. */
async function rounds(seconds: number, round: (i: number) => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  const until = performance.now() + seconds * 1000;
  for (let i = 0; out.length < 3 || performance.now() < until; i++) out.push(await round(i));
  return out;
}

/** A leader in a process of its own, elected: kill() it, and the ms from the kill are counted by the caller. */
async function crashingLeader(mode: "sdk" | "etcd3", target: string, name: string): Promise<{ kill(): void; exited: Promise<void> }> {
  const child = spawn(process.execPath, ["--import", "tsx", LEADER, mode, target, name, String(CRASH_TTL_SECONDS)], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const elected = new Promise<void>((resolve) => createInterface({ input: child.stdout! }).once("line", () => resolve()));
  if (!(await bounded(elected, 30_000))) {
    child.kill("SIGKILL");
    throw new Error(`the ${mode} leader process was not elected within 30 s`);
  }
  return { kill: () => child.kill("SIGKILL"), exited };
}

export const election: Scenario = {
  name: "election",
  about: "leader election: acquire-to-leader and leader-loss-to-new-leader, the SDK's campaign() vs etcd3's election()",
  estimate: (f: Flags) => 4 * (f.seconds + 1) + 2 * CRASH_ROUNDS * (CRASH_TTL_SECONDS + 3),
  async run(ctx) {
    const seconds = ctx.flags.seconds;
    const url = ctx.server().url;
    const [a, b] = [new FencekeeperClient({ servers: [url], holder: "a" }), new FencekeeperClient({ servers: [url], holder: "b" })];
    const etcd = new Etcd3({ hosts: ctx.etcd.endpoint });
    const name = (row: string, i: number) => `election-${ctx.runId}-${row}-${i}`;
    try {
      const table = new Table(`leader election, one etcd node: ms, p50 and p99 (crash rows: ${CRASH_ROUNDS} rounds, TTL ${CRASH_TTL_SECONDS} s)`, [
        { title: "row", width: 18, left: true },
        { title: "SDK p50", width: 8 },
        { title: "p99", width: 8 },
        { title: "etcd3 p50", width: 9 },
        { title: "p99", width: 8 },
        { title: "SDK/etcd3 p50", width: 13 },
        { title: "samples", width: 9 },
      ]);
      const rows: Record<string, { sdk: Latencies; etcd3: Latencies }> = {};
      const report = (row: string, sdk: number[], e: number[]) => {
        rows[row] = { sdk: summary(sdk), etcd3: summary(e) };
        const r = rows[row];
        table.row([row, ms(r.sdk.p50Ms), ms(r.sdk.p99Ms), ms(r.etcd3.p50Ms), ms(r.etcd3.p99Ms), ratio(r.sdk.p50Ms / r.etcd3.p50Ms), `${r.sdk.samples}/${r.etcd3.samples}`]);
      };

      ctx.progress("election: acquire-to-leader");
      const sdkAcquire = await rounds(seconds, async (i) => {
        const t0 = performance.now();
        const l = await a.campaign(name("acquire-sdk", i), "a", { ttl: TTL_SECONDS * 1000 });
        const t = performance.now() - t0;
        await l.resign();
        return t;
      });
      const etcdAcquire = await rounds(seconds, async (i) => {
        const t0 = performance.now();
        const c = await etcd.election(name("acquire-etcd3", i), TTL_SECONDS).campaign("a").wait();
        const t = performance.now() - t0;
        await c.resign();
        return t;
      });
      report("acquire-to-leader", sdkAcquire, etcdAcquire);

      ctx.progress("election: resign-to-leader");
      const sdkResign = await rounds(seconds, async (i) => {
        const resource = name("resign-sdk", i);
        const leader = await a.campaign(resource, "a", { ttl: TTL_SECONDS * 1000 });
        const following = b.campaign(resource, "b", { ttl: TTL_SECONDS * 1000 });
        while ((await a.describe(resource)).waiters === 0) await sleep(5);
        const t0 = performance.now();
        await leader.resign();
        const next = await following;
        const t = performance.now() - t0;
        await next.resign();
        return t;
      });
      const etcdResign = await rounds(seconds, async (i) => {
        const e = etcd.election(name("resign-etcd3", i), TTL_SECONDS);
        const leader = await e.campaign("a").wait();
        const follower = e.campaign("b");
        const following = follower.wait();
        // The follower's key is in etcd once there are two candidates under the election's prefix.
        while ((await etcd.getAll().prefix(`election/${name("resign-etcd3", i)}/`).count()) < 2) await sleep(5);
        const t0 = performance.now();
        await leader.resign();
        await following;
        const t = performance.now() - t0;
        await follower.resign();
        return t;
      });
      report("resign-to-leader", sdkResign, etcdResign);

      ctx.progress(`election: crash-to-leader, ${CRASH_ROUNDS} rounds each`);
      const crash = async (mode: "sdk" | "etcd3") => {
        const out: number[] = [];
        for (let i = 0; i < CRASH_ROUNDS; i++) {
          const resource = name(`crash-${mode}`, i);
          const leader = await crashingLeader(mode, mode === "sdk" ? url : ctx.etcd.endpoint, resource);
          const following =
            mode === "sdk"
              ? b.campaign(resource, "b", { ttl: TTL_SECONDS * 1000 }).then((l) => () => l.resign())
              : etcd.election(resource, TTL_SECONDS).campaign("b").wait().then((c) => () => c.resign());
          await sleep(300);
          const t0 = performance.now();
          leader.kill();
          const resign = await following;
          out.push(performance.now() - t0);
          await resign();
          await leader.exited;
        }
        return out;
      };
      report("crash-to-leader", await crash("sdk"), await crash("etcd3"));
      table.note("crash-to-leader waits out what the killed leader's TTL had left: it measures how soon after the TTL each notices.");
      return {
        json: { seconds, ttlSeconds: TTL_SECONDS, crashTtlSeconds: CRASH_TTL_SECONDS, rows },
        checks: [
          {
            target: "24. election: acquire-to-leader and leader-loss-to-new-leader vs etcd3's election()",
            status: "reported",
            detail: Object.entries(rows)
              .map(([row, r]) => `${row} p50 ${ms(r.sdk.p50Ms)} vs ${ms(r.etcd3.p50Ms)} ms`)
              .join("; "),
          },
        ],
      };
    } finally {
      await Promise.all([a.close(), b.close()]);
      etcd.close();
    }
  },
};
