// Acquire + release cycles, each on a resource of its own (no contention), 1 and 16 at a time:
// fencekeeper through the SDK beside etcd3's own lock() helper (issue 9, target 3). The SDK is measured
// both ways: with a lease per acquisition (sessions: false), and on sessions (its default), as etcd's own Mutex runs on a
// concurrency.Session; the target is judged on sessions, the way etcd's own lock is meant to be used.
// Then the handover (issue 21, target 5): from a holder's release to its waiter's grant, the SDK's waiting
// acquire beside a waiting lock written by hand on etcd3 (watch the key, lock() again).
import { Etcd3 } from "etcd3";
import { FencekeeperClient } from "../client/index.js";
import { measure, type Measurement } from "./measure.js";
import { ms, num, ratio, Table } from "./report.js";
import type { Flags, Scenario } from "./scenario.js";

const CONCURRENCY = [1, 16];
const TARGET_CONCURRENCY = 16;
const TTL_SECONDS = 10;

const failed = (m: Measurement) => m.errors > 0 || m.stuck > 0;
const cell = (m: Measurement) => (failed(m) ? `${num(m.perSecond)}!` : num(m.perSecond));

export const acquire: Scenario = {
  name: "acquire",
  about: "acquire + release cycles on distinct resources, 1 and 16 at a time: the SDK vs etcd3's lock() helper",
  estimate: (f: Flags) => CONCURRENCY.length * 3 * (f.seconds + 0.5) + 2 * f.seconds + 4,
  async run(ctx) {
    const seconds = ctx.flags.seconds;
    const client = new FencekeeperClient({ servers: [ctx.server().url], sessions: false });
    const onSessions = new FencekeeperClient({ servers: [ctx.server().url], sessions: true });
    const etcd = new Etcd3({ hosts: ctx.etcd.endpoint });
    try {
      const table = new Table(`acquire + release cycles on distinct resources, TTL ${TTL_SECONDS} s: cycles/s, p99 ms of a cycle, ${seconds} s per measurement`, [
        { title: "at a time", width: 9 },
        { title: "SDK, sessions", width: 13 },
        { title: "p99", width: 7 },
        { title: "SDK, a lease each", width: 17 },
        { title: "p99", width: 7 },
        { title: "etcd3 lock()", width: 12 },
        { title: "p99", width: 7 },
        { title: "sessions/lock", width: 13 },
        { title: "lease each/lock", width: 15 },
      ]);
      const rows = [];
      for (const concurrency of CONCURRENCY) {
        const name = (w: number, i: number) => `cycle-${ctx.runId}-${concurrency}-w${w}-${i}`;
        const cycles = (sdk: FencekeeperClient, mode: string) => {
          ctx.progress(`acquire: ${concurrency} at a time, fencekeeper SDK, ${mode}`);
          return measure({
            workers: concurrency,
            seconds,
            op: async (w, i) => {
              const lease = await sdk.acquire(`${name(w, i)}-${mode}`, { ttl: TTL_SECONDS * 1000 });
              await lease.release();
            },
          });
        };
        const sessions = await cycles(onSessions, "sessions");
        const fencekeeper = await cycles(client, "lease-each");
        ctx.progress(`acquire: ${concurrency} at a time, etcd3 lock()`);
        const lock = await measure({
          workers: concurrency,
          seconds,
          op: async (w, i) => {
            const l = await etcd.lock(`/bench-${ctx.runId}/locks/${name(w, i)}`).ttl(TTL_SECONDS).acquire();
            await l.release();
          },
        });
        const row = { concurrency, sessions, fencekeeper, lock, ratio: sessions.perSecond / lock.perSecond, leaseEachRatio: fencekeeper.perSecond / lock.perSecond };
        rows.push(row);
        table.row([
          String(concurrency),
          cell(sessions),
          ms(sessions.p99Ms),
          cell(fencekeeper),
          ms(fencekeeper.p99Ms),
          cell(lock),
          ms(lock.p99Ms),
          ratio(row.ratio),
          ratio(row.leaseEachRatio),
        ]);
        for (const [who, m] of [["SDK on sessions", sessions], ["SDK, a lease each", fencekeeper], ["etcd3 lock()", lock]] as const) {
          if (failed(m)) table.note(`${who}: ${m.errors} errors, ${m.stuck} stuck; first: ${m.firstError}`);
        }
      }
      const at = rows.find((r) => r.concurrency === TARGET_CONCURRENCY)!;
      const handover = await handovers((w) => ctx.progress(w), client, etcd, `cycle-${ctx.runId}-handover`, seconds);
      const hand = new Table(`handover, from the holder's release to the waiter's grant: ms, ${seconds} s per path`, [
        { title: "path", width: 44, left: true },
        { title: "handovers", width: 9 },
        { title: "p50", width: 7 },
        { title: "p99", width: 7 },
      ]);
      hand.row(["SDK: a waiting acquire (wait: true)", num(handover.sdk.length), ms(quantile(handover.sdk, 0.5)), ms(quantile(handover.sdk, 0.99))]);
      hand.row(["etcd3 by hand: watch the key, lock() again", num(handover.etcd3.length), ms(quantile(handover.etcd3, 0.5)), ms(quantile(handover.etcd3, 0.99))]);
      const handRatio = quantile(handover.sdk, 0.5) / quantile(handover.etcd3, 0.5);
      hand.note(`p50 ratio SDK / by hand: ${ratio(handRatio)} (issue 21: <= 1.00x). A holder killed: see the election scenario's crash-to-leader.`);
      return {
        json: { seconds, ttlSeconds: TTL_SECONDS, rows, handover },
        checks: [
          {
            target: "21.5 Handover, from Release to the next waiter's grant: p50 <= a waiting lock by hand on etcd3",
            status: handover.sdk.length > 0 && handRatio <= 1 ? "met" : "not met",
            detail: `${ratio(handRatio)} (p50 ${ms(quantile(handover.sdk, 0.5))} vs ${ms(quantile(handover.etcd3, 0.5))} ms)`,
          },
          {
            target: `21.5 Acquire + release, ${TARGET_CONCURRENCY} at a time: >= 3x etcd3's lock() on sessions, >= 1.5x with a lease each`,
            status: !failed(at.sessions) && at.ratio >= 3 && at.leaseEachRatio >= 1.5 ? "met" : "not met",
            detail:
              `on sessions ${ratio(at.ratio)} (${num(at.sessions.perSecond)} vs ${num(at.lock.perSecond)} cycles/s); ` +
              `a lease each ${ratio(at.leaseEachRatio)} (${num(at.fencekeeper.perSecond)} cycles/s)`,
          },
        ],
      };
    } finally {
      await Promise.all([client.close(), onSessions.close()]);
      etcd.close();
    }
  },
};

/** Handovers of one resource from a holder to a waiter, timed from the release to the grant, both ways. */
async function handovers(
  progress: (what: string) => void,
  client: FencekeeperClient,
  etcd: Etcd3,
  name: string,
  seconds: number,
): Promise<{ sdk: number[]; etcd3: number[] }> {
  const ttl = TTL_SECONDS * 1000;
  progress("acquire: handover, SDK");
  const sdk = await timeHandovers(seconds, (i) => `${name}-sdk-${i % 4}`, (resource) => client.acquire(resource, { ttl }), (resource) =>
    client.acquire(resource, { ttl, wait: true }),
  );
  progress("acquire: handover, etcd3 by hand");
  const byHand = await timeHandovers(seconds, (i) => `/bench-handover/${name}-${i % 4}`, (key) => etcd.lock(key).ttl(TTL_SECONDS).acquire(), (key) =>
    waitingLock(etcd, key),
  );
  return { sdk, etcd3: byHand };
}

/** For `seconds`, on names in turn: a holder, a waiter behind it, the ms from the holder's release to the waiter's grant. */
async function timeHandovers(
  seconds: number,
  nameOf: (i: number) => string,
  hold: (name: string) => Promise<{ release(): Promise<unknown> }>,
  wait: (name: string) => Promise<{ release(): Promise<unknown> }>,
): Promise<number[]> {
  const ms: number[] = [];
  const end = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < end; i++) {
    const holder = await hold(nameOf(i));
    const waiter = wait(nameOf(i));
    // Let the waiter reach its place in line before the release.
    await sleep(20);
    const t0 = performance.now();
    await holder.release();
    const next = await waiter;
    ms.push(performance.now() - t0);
    await next.release();
  }
  return ms;
}

/** A waiting lock as written by hand on etcd3: try lock(); if held, watch the key's deletion and try again. */
async function waitingLock(etcd: Etcd3, key: string) {
  for (;;) {
    const watcher = await etcd.watch().key(key).create();
    const deleted = new Promise<void>((resolve) => watcher.on("delete", () => resolve()));
    try {
      return await etcd.lock(key).ttl(TTL_SECONDS).acquire();
    } catch {
      await deleted;
    } finally {
      await watcher.cancel();
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
