// probe.ts elect: the TypeScript SDK's lead() on a resource, speaking the line protocol of the other
// languages' `elect` (sdk/go/cmd/fk-sdk-probe/elect.go): it prints elected, abort, deposed, new-leader, and
// leader for each change observeLeaders() gives, and answers resign, proclaim V, leader, second (a second
// client's lead() in this process), semaphore R N WAIT_MS, permit-write K V, describe-of R,
// release-permits; with --linger, onElected goes on that long after its signal aborted (printing
// returned); at the end of stdin it stops lead() and prints stopped.
import { createInterface } from "node:readline";
import { FencekeeperClient, FencekeeperError, LeaseLostError, type Credentials, type Leader, type Leadership, type Lease, type Token } from "../../../client/index.js";

const print = (fields: Record<string, unknown>) => process.stdout.write(JSON.stringify({ at: Date.now(), ...fields }, (_, v) => (typeof v === "bigint" ? String(v) : v)) + "\n");
const tokenJson = (t: Token) => ({ resource: t.resource, generation: String(t.generation), lease_id: String(t.leaseId), shared: t.shared === true });
const leaderJson = (l: Leader | undefined) => ({ holder: l?.holder ?? null, generation: l ? String(l.token.generation) : null, value: l ? new TextDecoder().decode(l.value) : null });

export async function elect(o: { servers: string[]; resource: string; ttl: number; holder: string; value: string; linger: number; credentials: Credentials }): Promise<void> {
  const client = new FencekeeperClient({ servers: o.servers, holder: o.holder, credentials: o.credentials });
  const stop = new AbortController();
  let current: Leadership | undefined;
  const permits: Lease[] = [];
  const observing = (async () => {
    try {
      for await (const change of client.observeLeaders(o.resource, { signal: stop.signal })) print({ event: "leader", revision: String(change.revision), ...leaderJson(change.leader) });
    } catch (err) {
      print({ event: "observe-error", error: String(err) });
    }
  })();
  const lead = (c: FencekeeperClient, n: number) =>
    c
      .lead(
        o.resource,
        {
          async onElected(signal, token, leadership) {
            current = leadership;
            print({ event: "elected", loop: n, token: tokenJson(token), valid_until: leadership.lease.validUntil.getTime() });
            await new Promise((resolve) => (signal.aborted ? resolve(undefined) : signal.addEventListener("abort", resolve, { once: true })));
            const e = signal.reason as LeaseLostError;
            print({ event: "abort", loop: n, generation: String(token.generation), why: e.why, valid_until: e.validUntil.getTime() });
            await new Promise((resolve) => setTimeout(resolve, o.linger)); // as code that ignores its signal would
            print({ event: "returned", loop: n, generation: String(token.generation) });
          },
          onDeposed(e) {
            print({ event: "deposed", loop: n, generation: String(e.token.generation), why: e.why });
          },
          onNewLeader(l) {
            print({ event: "new-leader", loop: n, ...leaderJson(l) });
          },
        },
        { ttl: o.ttl, value: o.value, signal: stop.signal },
      )
      .then(
        () => undefined,
        (err) => String(err),
      );
  const leading = lead(client, 1);
  let second: { client: FencekeeperClient; leading: Promise<string | undefined> } | undefined;

  for await (const line of createInterface({ input: process.stdin })) {
    const args = line.trim().split(/\s+/);
    try {
      if (args[0] === "resign" && current) {
        await current.resign();
        print({ event: "resigned", generation: String(current.token.generation) });
      } else if (args[0] === "proclaim" && args.length === 2 && current) {
        try {
          print({ event: "proclaim", ok: true, revision: String(await current.proclaim(args[1])) });
        } catch (err) {
          print({ event: "proclaim", ok: false, error: (err as Error).constructor.name, reason: (err as FencekeeperError).reason ?? "" });
        }
      } else if (args[0] === "second" && !second) {
        const other = new FencekeeperClient({ servers: o.servers, holder: `${o.holder}-2`, credentials: o.credentials });
        second = { client: other, leading: lead(other, 2) };
        print({ event: "second-started" });
      } else if (args[0] === "leader") {
        print({ event: "leader-now", ...leaderJson(await client.leader(o.resource)) });
      } else if (args[0] === "semaphore" && args.length === 4) {
        const waitMs = Number(args[3]);
        try {
          // WAIT_MS: 0 as long as it takes, -1 not at all, else at most that long.
          const permit = await client.semaphore(args[1], Number(args[2]), { ttl: o.ttl, wait: waitMs > 0 ? waitMs : waitMs === 0 });
          permits.push(permit);
          print({ event: "permit", ok: true, token: tokenJson(permit.token) });
        } catch (err) {
          print({ event: "permit", ok: false, error: (err as Error).constructor.name, reason: (err as FencekeeperError).reason ?? "" });
        }
      } else if (args[0] === "permit-write" && args.length === 3 && permits.length > 0) {
        try {
          const commit = await permits.at(-1)!.put(args[1], args[2], { mode: "order" });
          print({ event: "permit-write", ok: true, fence: String(commit.fence) });
        } catch (err) {
          if (err instanceof LeaseLostError) print({ event: "permit-write", ok: false, sent: false, why: err.why });
          else print({ event: "permit-write", ok: false, sent: true, reason: (err as FencekeeperError).reason ?? "", error: (err as Error).constructor.name });
        }
      } else if (args[0] === "describe-of" && args.length === 2) {
        const d = await client.describe(args[1]);
        const holders = d.holders.map((h) => ({ holder: h.holder, generation: String(h.token.generation), shared: h.token.shared === true }));
        print({ event: "described", held: d.held, value: new TextDecoder().decode(d.value ?? new Uint8Array(0)), max_holders: d.maxHolders, holders });
      } else if (args[0] === "release-permits") {
        for (const permit of permits.splice(0)) await permit.release();
        print({ event: "permits-released" });
      } else if (args[0]) {
        print({ event: "error", message: `unknown command or nothing to do it on: ${line}` });
      }
    } catch (err) {
      print({ event: "error", message: String(err) });
    }
  }
  stop.abort();
  const error = (await leading) ?? (await second?.leading);
  await second?.client.close();
  await observing;
  print({ event: "stopped", ...(error ? { error } : {}) });
  await client.close();
}
