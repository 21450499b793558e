// Measures how long loss detection takes, against real etcd and server processes:
//   node --import tsx test/client/measure-loss.ts [--trials 5] [--ttl 2000]
// Two cases, each a number of trials:
//   holder paused  the holder process is stopped (SIGSTOP) and resumed once etcd has let its lease go;
//   server hangs   the only server the holder knows is stopped while the holder runs; etcd's expiry is
//                  seen through a second server replica.
// For each: how long after the last confirmed renewal the lease was given up (validUntil) and its signal
// aborted, how late the abort came after validUntil (or after the resume), and how long before etcd's own
// expiry (as another client saw it) the holder had stopped assuming the lease.
import { Command, InvalidArgumentError } from "commander";
import { FencekeeperClient } from "../../client/index.js";
import { HolderProcess } from "../../demo/holder-process.js";
import { startEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, sleep, within } from "../harness/suite.js";

const int = (raw: string) => {
  if (!/^\d+$/.test(raw)) throw new InvalidArgumentError(`expected a whole number, got "${raw}"`);
  return Number(raw);
};
const o = new Command("measure-loss").option("--trials <n>", "trials per case", int, 5).option("--ttl <ms>", "lease TTL", int, 2000).parse().opts<{ trials: number; ttl: number }>();

type Row = Record<string, number>;

/** When another client sees the resource's lease go, after `from`. */
async function expiry(observer: FencekeeperClient, resource: string, signal: AbortSignal): Promise<number | undefined> {
  for await (const x of observer.observe(resource, { signal })) if (!x.held) return Date.now();
  return undefined;
}

async function trial(holderServer: TestServer, observer: FencekeeperClient, n: number, pauseWhat: "holder" | "server"): Promise<Row> {
  const resource = `measure-${pauseWhat}-${process.pid}-${n}`;
  const holder = new HolderProcess(holderServer.url, "H", resource, o.ttl);
  try {
    await holder.next("acquired", 15_000);
    await eventually(() => holder.seen("renewed").length > 0, "a renewal", o.ttl);
    await sleep(Math.random() * (o.ttl / 3)); // pause at any point of the renewal cycle
    const stop = new AbortController();
    const expired = expiry(observer, resource, stop.signal);
    await sleep(20);
    const pausedAt = Date.now();
    if (pauseWhat === "holder") holder.pause();
    else holderServer.process.kill("SIGSTOP");
    const etcdExpiredAt = await within(expired, o.ttl + 5000, undefined);
    stop.abort();
    if (etcdExpiredAt === undefined) throw new Error("etcd did not expire the lease");
    let resumedAt = NaN;
    if (pauseWhat === "holder") {
      await sleep(300);
      resumedAt = Date.now();
      holder.resume();
    }
    const lost = await holder.next("lost", 5000);
    const confirmed = holder.seen("renewed").at(-1)!;
    return {
      "validUntil - last confirmed": lost.validUntil - lost.lastConfirmedAt,
      "abort - last confirmed": lost.at - lost.lastConfirmedAt,
      ...(pauseWhat === "holder" ? { "abort - resume": lost.at - resumedAt } : { "abort - validUntil": lost.at - lost.validUntil }),
      "etcd expiry - validUntil": etcdExpiredAt - lost.validUntil,
      ...(pauseWhat === "server" ? { "etcd expiry - abort": etcdExpiredAt - lost.at } : {}),
      "etcd expiry - pause": etcdExpiredAt - pausedAt,
      "last renewal: answer - send": confirmed.confirmedAt - confirmed.sentAt,
    };
  } finally {
    if (pauseWhat === "server") holderServer.process.kill("SIGCONT");
    await holder.kill();
  }
}

function report(title: string, rows: Row[]): void {
  console.log(`\n${title} (${rows.length} trials, TTL ${o.ttl} ms, drift margin ${100 + o.ttl / 100} ms), in ms:`);
  console.log(`  ${"".padEnd(30)} ${"min".padStart(7)} ${"median".padStart(7)} ${"max".padStart(7)}`);
  for (const key of Object.keys(rows[0])) {
    const v = rows.map((r) => r[key]).sort((a, b) => a - b);
    const fmt = (x: number) => x.toFixed(0).padStart(7);
    console.log(`  ${key.padEnd(30)} ${fmt(v[0])} ${fmt(v[Math.floor(v.length / 2)])} ${fmt(v[v.length - 1])}`);
  }
}

const etcd = await startEtcd();
const prefix = `/measure-loss-${process.pid}/`;
const args = ["--metrics-listen", "off"];
const [first, second] = await Promise.all([startServer({ etcd: etcd.endpoint, prefix, args }), startServer({ etcd: etcd.endpoint, prefix, args })]);
const observer = new FencekeeperClient({ servers: second.url });
try {
  for (const what of ["holder", "server"] as const) {
    const rows: Row[] = [];
    for (let i = 0; i < o.trials; i++) rows.push(await trial(first, observer, i, what));
    report(what === "holder" ? "holder paused (SIGSTOP of the holder process)" : "server hangs (SIGSTOP of the holder's only server)", rows);
  }
} finally {
  await observer.close();
  await Promise.all([first.stop("SIGKILL"), second.stop("SIGKILL")]);
  await etcd.destroy();
}
