// `npm run demo`: the article's timeline, with two real holder processes.
//
//   A: acquire(n) ---- paused (SIGSTOP) ------------------ resumed ---- write(n): refused
//                           |
//                           | A's lease expires
//                           v
//   B:      (waiting) ---- acquire(m > n) ---- write(m)
//
// It starts a throwaway server (etcd in a temporary folder, free ports) unless --server is given, prints
// what happens as a timeline, and exits 1 if anything happens otherwise than above.
import { Command, InvalidArgumentError, Option } from "commander";
import { Code } from "@connectrpc/connect";
import { FencekeeperClient } from "../client/index.js";
import { startDemoServer, type DemoServer } from "./embedded-server.js";
import { HolderProcess, type HolderEvent } from "./holder-process.js";

const options = new Command("npm run demo --")
  .description("play the article's stale-holder timeline with two real processes")
  .addOption(new Option("--server <url>", "use this fencekeeper server instead of starting one").env("FENCEKEEPER_URL"))
  .addOption(new Option("--ttl <ms>", "the lease TTL of A and B, in ms (etcd grants whole seconds, at least 2 s)").argParser(ms).default(2000))
  .addOption(new Option("--pause <ms>", "resume A after this long instead of after B has written (shorter than the TTL: nothing goes stale, and the demo fails)").argParser(ms))
  .parse()
  .opts<{ server?: string; ttl: number; pause?: number }>();

function ms(raw: string): number {
  if (!/^\d+$/.test(raw)) throw new InvalidArgumentError(`expected milliseconds, got "${raw}"`);
  return Number(raw);
}

const KEY = "doc";
const t0 = Date.now();
const seconds = (at: number) => `+${((at - t0) / 1000).toFixed(2)}s`;
const line = (who: string, text: string, at = Date.now()) => console.log(`${seconds(at).padStart(8)}  ${who.padEnd(5)} ${text}`);

class Unexpected extends Error {}
function expect(ok: unknown, what: string): asserts ok {
  if (!ok) throw new Unexpected(what);
}

let server: DemoServer | undefined;
const holders: HolderProcess[] = [];
const observing = new AbortController();
let stopping: Promise<void> | undefined;
const stopAll = () =>
  (stopping ??= (async () => {
    observing.abort();
    for (const h of holders) await h.kill(); // a paused holder too: kill() resumes it first
    await server?.stop();
  })());
process.once("SIGINT", () => {
  console.log("\ninterrupted");
  void stopAll().then(() => process.exit(130));
});

let failed = false;
try {
  if (!options.server) server = await startDemoServer();
  const url = options.server || server!.url;
  line("demo", server ? `fencekeeper on ${url} (etcd in ${server.dir})` : `fencekeeper on ${url}`);
  line("demo", "A holds a lease and is paused past its TTL; B takes over and writes; A comes back and writes");
  const resource = `demo-${process.pid}-${t0.toString(36)}`;
  const client = new FencekeeperClient({ servers: url, sessions: false });
  const ttl = options.ttl;

  const a = new HolderProcess(url, "A", resource, ttl);
  holders.push(a);
  const aGot = await a.next("acquired", 15_000);
  const n = BigInt(aGot.token.generation);
  line("A", `acquired "${resource}": token ${n} (lease TTL ${aGot.ttlMs / 1000} s, valid until ${seconds(aGot.validUntil)})`, aGot.at);
  a.send(`put ${KEY} written by A while it held the lease`);
  const aFirst = await a.next("put", 10_000);
  expect(aFirst.ok, `A's first write failed: ${aFirst.message}`);
  line("A", `write "${KEY}" with token ${n}: accepted, fence ${aFirst.fence}`, aFirst.at);

  const b = new HolderProcess(url, "B", resource, ttl);
  holders.push(b);
  line("B", "waits in line for the resource", (await b.next("waiting", 15_000)).at);

  const handover = (async () => {
    for await (const o of client.observe(resource, { signal: observing.signal })) {
      if (o.token && o.token.generation !== n) return { at: Date.now(), generation: o.token.generation };
    }
  })().catch(() => undefined);

  a.pause();
  const pausedAt = Date.now();
  line("A", "is paused (SIGSTOP): a GC pause, a stalled VM; it cannot renew and does not know it", pausedAt);
  let resumed = false;
  const early = options.pause !== undefined ? setTimeout(() => (a.resume(), (resumed = true), line("A", "resumed early (SIGCONT)")), options.pause) : undefined;

  let bGot: HolderEvent;
  try {
    bGot = await b.next("acquired", ttl + 3_000);
  } catch {
    throw new Unexpected(`B did not get the resource within ${(ttl + 3000) / 1000} s: A's lease did not expire`);
  }
  const seen = await handover;
  if (seen) line("etcd", `A's lease expired ${((seen.at - pausedAt) / 1000).toFixed(2)} s into the pause; the resource passed to B`, seen.at);
  const m = BigInt(bGot.token.generation);
  line("B", `acquired: token ${m}`, bGot.at);
  expect(m > n, `B's token ${m} is not greater than A's ${n}`);
  b.send(`put ${KEY} written by B`);
  const bPut = await b.next("put", 10_000);
  expect(bPut.ok, `B's write failed: ${bPut.message}`);
  line("B", `write "${KEY}" with token ${m}: accepted, fence ${bPut.fence}`, bPut.at);

  clearTimeout(early);
  if (!resumed) {
    a.resume();
    line("A", `resumes (SIGCONT) after ${((Date.now() - pausedAt) / 1000).toFixed(2)} s, with token ${n} still in memory`);
  }
  const lost = await a.next("lost", 5_000).catch(() => undefined);
  expect(lost, "A's SDK did not report its lease lost after the pause");
  line("A", `SDK: lease signal aborted (${lost.why}): valid until ${seconds(lost.validUntil)}, seen at ${seconds(lost.at)}`, lost.at);
  a.send(`put-token ${KEY} written by A after its pause`);
  const stale = await a.next("put-token", 10_000);
  expect(!stale.ok, "A's stale write was ACCEPTED");
  line("A", `write "${KEY}" with token ${n} anyway: REFUSED ${Code[stale.code]} ${stale.reason} (fence ${stale.fence})`, stale.at);
  expect(stale.code === Code.FailedPrecondition && stale.reason === "STALE_TOKEN", `A's write was refused with ${Code[stale.code]} ${stale.reason}, not FailedPrecondition STALE_TOKEN`);

  const final = await client.store.get(resource, KEY);
  const value = new TextDecoder().decode(final.value);
  line("store", `"${KEY}" = "${value}" (fence ${final.fence})`);
  expect(value === "written by B" && final.fence === m, `the final value is "${value}" at fence ${final.fence}, not B's`);
  await client.close();
  console.log(`\nOK: A's stale write was refused (token ${n} < fence ${m}) and B's value stands.`);
} catch (err) {
  failed = true;
  console.log(`\nFAILED: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  await stopAll();
}
process.exit(failed ? 1 : 0);
