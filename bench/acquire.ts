// Acquire + release cycles, each on a resource of its own (no contention), 1 and 16 at a time:
// fencekeeper through the SDK beside etcd3's own lock() helper (issue 9, target 3). The SDK is measured
// both ways: with a lease per acquisition (its default), and on sessions, as etcd's own Mutex runs on a
// concurrency.Session; the target is judged on sessions, the way etcd's own lock is meant to be used.
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
  estimate: (f: Flags) => CONCURRENCY.length * 3 * (f.seconds + 0.5) + 2,
  async run(ctx) {
    const seconds = ctx.flags.seconds;
    const client = new FencekeeperClient({ servers: [ctx.server().url] });
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
      return {
        json: { seconds, ttlSeconds: TTL_SECONDS, rows },
        checks: [
          {
            target: `3. Acquire + release, ${TARGET_CONCURRENCY} at a time: >= 2x etcd3's lock()`,
            status: !failed(at.sessions) && at.ratio >= 2 ? "met" : "not met",
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
