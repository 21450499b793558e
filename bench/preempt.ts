// Takeover (issue 25): how soon a dead holder's writes are refused, with preemption and without. Rows:
//   preempt     a holder that stopped (never renews again) holds with a 10 s TTL; from the preempting
//               Acquire sent to the old holder's write (FENCE_MODE_ORDER) refused
//   ttl-wait    what a takeover waits today: the new holder queues (wait) behind a stopped holder whose
//               TTL is etcd's least (2 s), is granted when the lease expires, writes, and only then is the
//               old holder's ORDER write refused; from the Acquire sent to that refusal
// The old holder's write goes from this process with its token, as a paused holder's would on waking.
import { Code, ConnectError } from "@connectrpc/connect";
import { FenceMode } from "../gen/ts/fencekeeper/v1/token_pb.js";
import { ErrorInfoSchema } from "../gen/ts/google/rpc/error_details_pb.js";
import { clientsFor, type Clients } from "../test/harness/clients.js";
import { percentile } from "./measure.js";
import { ms, Table } from "./report.js";
import type { Flags, Scenario } from "./scenario.js";

const HOLDER_TTL_SECONDS = 10;
const LEAST_TTL_SECONDS = 2;
const TTL_ROUNDS = 3;

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

/** The old holder's write under its token: resolves with the refusal's reason; throws if it was accepted. */
async function refused(c: Clients, resource: string, token: unknown): Promise<string> {
  try {
    await c.store.put({ resource, key: "k", value: Buffer.from("old"), mutation: { token: token as never, mode: FenceMode.ORDER } });
  } catch (err) {
    const e = ConnectError.from(err);
    if (e.code !== Code.FailedPrecondition) throw e;
    return e.findDetails(ErrorInfoSchema)[0]?.reason ?? "";
  }
  throw new Error(`the old holder's write to "${resource}" was accepted`);
}

interface Row {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

const summary = (xs: number[]): Row => {
  const s = [...xs].sort((a, b) => a - b);
  return { samples: s.length, p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), maxMs: s.at(-1)! };
};

export const preempt: Scenario = {
  name: "preempt",
  about: "takeover: preempting Acquire sent to the old holder's write refused, vs waiting out a TTL",
  estimate: (f: Flags) => f.seconds + TTL_ROUNDS * (LEAST_TTL_SECONDS + 2),
  async run(ctx) {
    const c = clientsFor(ctx.server().url);
    const name = (row: string, i: number) => `preempt-${ctx.runId}-${row}-${i}`;

    ctx.progress("preempt: preemption rounds");
    const preempting: number[] = [];
    const until = performance.now() + ctx.flags.seconds * 1000;
    for (let i = 0; preempting.length < 3 || performance.now() < until; i++) {
      const resource = name("preempt", i);
      const old = await c.lease.acquire({ resource, ttl: ttl(HOLDER_TTL_SECONDS), holder: "old" });
      const t0 = performance.now();
      const taken = await c.lease.acquire({ resource, ttl: ttl(HOLDER_TTL_SECONDS), holder: "new", preempt: true });
      await refused(c, resource, old.token);
      preempting.push(performance.now() - t0);
      await c.lease.release({ token: taken.token });
    }

    ctx.progress(`preempt: ${TTL_ROUNDS} rounds waiting out a ${LEAST_TTL_SECONDS} s TTL`);
    const waiting: number[] = [];
    for (let i = 0; i < TTL_ROUNDS; i++) {
      const resource = name("ttl", i);
      const old = await c.lease.acquire({ resource, ttl: ttl(LEAST_TTL_SECONDS), holder: "old" });
      const t0 = performance.now();
      const next = await c.lease.acquire({ resource, ttl: ttl(HOLDER_TTL_SECONDS), holder: "new", wait: true });
      // Until the new holder writes, ORDER still admits the old generation: that is the gap fencing closes.
      await c.store.put({ resource, key: "k", value: Buffer.from("new"), mutation: { token: next.token, mode: FenceMode.ORDER } });
      await refused(c, resource, old.token);
      waiting.push(performance.now() - t0);
      await c.lease.release({ token: next.token });
    }

    const rows = { preempt: summary(preempting), ttlWait: summary(waiting) };
    const table = new Table("takeover, one etcd node: from the new holder's Acquire sent to the old holder's ORDER write refused (ms)", [
      { title: "row", width: 26, left: true },
      { title: "p50", width: 9 },
      { title: "p99", width: 9 },
      { title: "max", width: 9 },
      { title: "samples", width: 8 },
    ]);
    table.row([`preempt (TTL ${HOLDER_TTL_SECONDS} s)`, ms(rows.preempt.p50Ms), ms(rows.preempt.p99Ms), ms(rows.preempt.maxMs), String(rows.preempt.samples)]);
    table.row([`ttl-wait (TTL ${LEAST_TTL_SECONDS} s)`, ms(rows.ttlWait.p50Ms), ms(rows.ttlWait.p99Ms), ms(rows.ttlWait.maxMs), String(rows.ttlWait.samples)]);
    table.note(`waiting out a TTL takes about the TTL (etcd's least, ${LEAST_TTL_SECONDS} s, here; ${HOLDER_TTL_SECONDS} s for the preempted holders' TTL), whatever the machine.`);
    return {
      json: { holderTtlSeconds: HOLDER_TTL_SECONDS, leastTtlSeconds: LEAST_TTL_SECONDS, rows },
      checks: [
        {
          target: "25. takeover: preempting Acquire sent to the old holder's write refused, against the TTL a takeover waits today",
          status: "reported",
          detail: `preempt p50 ${ms(rows.preempt.p50Ms)} ms (holder TTL ${HOLDER_TTL_SECONDS} s); waiting out a ${LEAST_TTL_SECONDS} s TTL p50 ${ms(rows.ttlWait.p50Ms)} ms`,
        },
      ],
    };
  },
};
