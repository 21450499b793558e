// A process that leads a resource with the SDK's lead(), for the election tests: its elected code acts
// every few ms while its signal says it leads, as a worker would, and it reports in JSON lines on stdout:
// elected, aborted (the signal, with the last time it acted), deposed, new-leader, and the outcome of
// each command. It runs as a process of its own so that it can really be paused (SIGSTOP). On stdin:
//   put-token <key> <value>   write under the last elected token, as a program that ignored its signal
//   proclaim <value>          publish a value under the last leadership
//   stop                      stop leading and exit
// Usage: leader-process.ts <server-url> <name> <resource> <ttl-ms>
import { createInterface } from "node:readline";
import { FencekeeperClient, FencekeeperError, LeaseLostError, tokenToJson, type Leadership } from "../../client/index.js";

const [url, name, resource, ttl] = process.argv.slice(2);
const say = (event: string, data: Record<string, unknown> = {}) =>
  process.stdout.write(JSON.stringify({ event, at: Date.now(), ...data }, (_, v) => (typeof v === "bigint" ? String(v) : v)) + "\n");

const client = new FencekeeperClient({ servers: url, holder: name });
const stop = new AbortController();
let last: Leadership | undefined;

const leading = client.lead(
  resource,
  {
    async onElected(signal, token, leadership) {
      last = leadership;
      say("elected", { token: tokenToJson(token), validUntil: leadership.lease.validUntil.getTime() });
      let lastActedAt = 0;
      let acts = 0;
      await new Promise<void>((resolve) => {
        const worker = setInterval(() => {
          // The look a worker makes before each step of its work.
          if (signal.aborted) {
            clearInterval(worker);
            const e = signal.reason as LeaseLostError;
            say("aborted", { why: e.why, validUntil: e.validUntil.getTime(), lastActedAt, acts });
            return resolve();
          }
          lastActedAt = Date.now();
          acts++;
        }, 5);
      });
    },
    onDeposed: (e) => say("deposed", { why: e.why }),
    onNewLeader: (l) => say("new-leader", { holder: l?.holder, generation: l?.token.generation }),
  },
  { ttl: Number(ttl), value: `${name}-address`, signal: stop.signal },
);

function outcome(err: unknown): Record<string, unknown> {
  if (err instanceof LeaseLostError) return { ok: false, local: true, why: err.why };
  if (err instanceof FencekeeperError) return { ok: false, code: err.code, reason: err.reason };
  return { ok: false, message: String(err) };
}

for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, ...args] = line.trim().split(" ");
  if (cmd === "stop") break;
  try {
    if (cmd === "put-token") {
      const commit = await client.store.put(last!.token, args[0], args.slice(1).join(" "), { mode: "order" });
      say(cmd, { ok: true, fence: commit.fence });
    } else if (cmd === "proclaim") {
      say(cmd, { ok: true, revision: await last!.proclaim(args.join(" ")) });
    }
  } catch (err) {
    say(cmd, outcome(err));
  }
}
stop.abort();
await leading;
await client.close();
say("exited");
