// A holder process on sessions, for the session timeline test: it acquires each resource named on its
// command line on the SDK's session (ClientOptions.sessions), looks at its leases every few ms as a
// worker would before each step, and reports in JSON lines on stdout: acquired (per lease), renewed (per
// session renewal), lost (per lease, with the last time a look found it held), and the outcome of each
// command. It runs as a process of its own so that it can really be paused (SIGSTOP). On stdin:
//   put <resource> <key> <value>        write through the lease (it checks the lease first)
//   put-token <resource> <key> <value>  write with the token alone, as a program that ignored its signal
// Usage: session-holder.ts <server-url> <ttl-ms> <resource>...
import { createInterface } from "node:readline";
import { FencekeeperClient, FencekeeperError, LeaseLostError, StaleTokenError, tokenToJson, type Lease } from "../../client/index.js";

const [url, ttl, ...resources] = process.argv.slice(2);
const say = (event: string, data: Record<string, unknown> = {}) =>
  process.stdout.write(JSON.stringify({ event, at: Date.now(), ...data }, (_, v) => (typeof v === "bigint" ? String(v) : v)) + "\n");

const client = new FencekeeperClient({
  servers: url,
  sessions: true,
  onEvent: (e) => {
    if (e.type === "session-renewed") {
      say("renewed", { sessionId: e.sessionId, leases: e.leases, sentAt: e.sentAt.getTime(), confirmedAt: e.confirmedAt.getTime(), validUntil: e.validUntil.getTime() });
    }
  },
});

const leases = new Map<string, Lease>();
for (const resource of resources) {
  const lease = await client.acquire(resource, { ttl: Number(ttl), wait: true });
  leases.set(resource, lease);
  say("acquired", { resource, token: tokenToJson(lease.token), ttlMs: lease.ttlMs, validUntil: lease.validUntil.getTime() });
  let lastSeenHeldAt = Date.now();
  const worker = setInterval(() => {
    const at = Date.now();
    if (lease.held) lastSeenHeldAt = at;
  }, 5);
  lease.signal.addEventListener("abort", () => {
    clearInterval(worker);
    const e = lease.signal.reason as LeaseLostError;
    say("lost", { resource, why: e.why, validUntil: e.validUntil.getTime(), lostAt: e.lostAt.getTime(), lastSeenHeldAt });
  });
}

function outcome(err: unknown): Record<string, unknown> {
  if (err instanceof LeaseLostError) return { ok: false, local: true, why: err.why };
  if (err instanceof FencekeeperError) return { ok: false, code: err.code, reason: err.reason, fence: err instanceof StaleTokenError ? err.fence : undefined };
  return { ok: false, message: String(err) };
}

for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, resource, key, ...words] = line.trim().split(" ");
  const lease = leases.get(resource)!;
  const value = words.join(" ");
  try {
    const commit = cmd === "put" ? await lease.put(key, value) : await client.store.put(lease.token, key, value, { mode: "order" });
    say(cmd, { resource, ok: true, fence: commit.fence });
  } catch (err) {
    say(cmd, { resource, ...outcome(err) });
  }
}
await client.close();
