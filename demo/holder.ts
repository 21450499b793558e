// A lease holder for the demo (and the client tests), as a process of its own so that it can really be
// paused (SIGSTOP). It acquires a resource (waiting in line if held), looks at its lease every few ms as a
// worker would before each step, and reports in JSON lines on stdout: waiting, acquired, renewed, lost
// (with the last time a look found the lease held), and the outcome of each command. On stdin it takes:
//   put <key> <value>        write through the lease: refused locally once the lease is lost
//   put-token <key> <value>  write with the token alone, as a program that ignored its lease's signal would
//   exit                     release and exit
// Usage: holder.ts <server-url> <name> <resource> <ttl-ms>
import { createInterface } from "node:readline";
import { FencekeeperClient, FencekeeperError, LeaseLostError, StaleTokenError, tokenToJson, type Lease } from "../client/index.js";

const [url, name, resource, ttl] = process.argv.slice(2);
const say = (event: string, data: Record<string, unknown> = {}) =>
  process.stdout.write(JSON.stringify({ event, at: Date.now(), ...data }, (_, v) => (typeof v === "bigint" ? String(v) : v)) + "\n");

// A lease of its own: the demo follows one lease's renewals ("renewed"), which a session reports as its own.
const client = new FencekeeperClient({
  servers: url,
  holder: name,
  sessions: false,
  onEvent: (e) => {
    if (e.type === "renewed") say("renewed", { sentAt: e.sentAt.getTime(), confirmedAt: e.confirmedAt.getTime(), validUntil: e.validUntil.getTime() });
  },
});
say("waiting");
const lease: Lease = await client.acquire(resource, { ttl: Number(ttl), wait: true });
say("acquired", { token: tokenToJson(lease.token), ttlMs: lease.ttlMs, validUntil: lease.validUntil.getTime() });

let lastSeenHeldAt = Date.now();
const worker = setInterval(() => {
  const at = Date.now();
  if (lease.held) lastSeenHeldAt = at;
}, 5);
lease.signal.addEventListener("abort", () => {
  clearInterval(worker);
  const e = lease.signal.reason as LeaseLostError;
  const cause = e.cause instanceof FencekeeperError ? e.cause : undefined;
  say("lost", { why: e.why, reason: cause?.reason, byPrincipal: cause?.metadata.by_principal, byGeneration: cause?.metadata.by_generation, message: e.message, validUntil: e.validUntil.getTime(), lastConfirmedAt: e.lastConfirmedAt.getTime(), lastSeenHeldAt });
});

function outcome(err: unknown): Record<string, unknown> {
  if (err instanceof LeaseLostError) return { ok: false, local: true, message: err.message };
  if (err instanceof FencekeeperError) {
    return { ok: false, code: err.code, reason: err.reason, message: err.message, fence: err instanceof StaleTokenError ? err.fence : undefined };
  }
  return { ok: false, message: String(err) };
}

for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, key, ...words] = line.trim().split(" ");
  const value = words.join(" ");
  if (cmd === "exit") break;
  try {
    const commit = cmd === "put" ? await lease.put(key, value) : await client.store.put(lease.token, key, value);
    say(cmd, { key, value, ok: true, fence: commit.fence });
  } catch (err) {
    say(cmd, { key, value, ...outcome(err) });
  }
}
await client.close();
