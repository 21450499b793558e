// fencekeeper acquire: take a resource, print its token, keep the lease alive until Ctrl-C (which
// releases it, exit 0) or until it is lost (exit 3).
import { Command, InvalidArgumentError, Option } from "commander";
import { formatToken, tokenToJson, type LeaseLostError } from "../../client/index.js";
import { EXIT } from "../exit-codes.js";
import { duration } from "../parse.js";
import { action, interruption } from "../run.js";

interface Options {
  ttl: number;
  wait?: true | string;
  holder?: string;
  lockDelay?: number;
  shared?: boolean;
  maxHolders?: number;
  preempt?: boolean;
  verbose?: boolean;
}

export function acquireCommand(): Command {
  return new Command("acquire")
    .description("acquire a resource, print its token, and hold the lease until Ctrl-C (released) or its loss (exit 3)")
    .argument("<resource>", "the resource to acquire")
    .addOption(
      new Option("--ttl <duration>", "the lease's TTL (e.g. 10s, 2500ms); etcd grants whole seconds, at least 2 s").argParser(duration).default(10_000, "10s"),
    )
    .option("--wait [duration]", "wait in line while the resource is held (at most <duration>, if given)")
    .option("--holder <label>", "who holds it, as Describe and Observe show (default: host:pid)")
    .addOption(
      new Option("--lock-delay <duration>", "if the lease expires (it is not released), nobody is granted the resource for this long (e.g. 10s); whole seconds").argParser(duration),
    )
    .option("--shared", "hold it shared, beside other shared holders (a reader): its token cannot write to the fenced store")
    .addOption(
      new Option("--max-holders <n>", "a permit of a counting semaphore of n: shared, granted while fewer than n hold (docs/semaphores.md)").argParser(permits),
    )
    .option("--preempt", "take it from its holder at once, ahead of the waiters (docs/preemption.md; needs the policy verb preempt or admin)")
    .option("--verbose", "also print every confirmed renewal")
    .action(
      action(async (ctx, resource: string, o: Options) => {
        const stop = interruption();
        const wait = o.wait === undefined ? false : o.wait === true ? true : duration(o.wait);
        const client = ctx.client({
          onEvent: (e) => {
            if (e.type !== "renewed" || !o.verbose) return;
            const { sentAt, confirmedAt, validUntil } = e;
            ctx.out.result({ event: "renewed", sentAt, confirmedAt, validUntil }, () => `renewed: valid until ${validUntil.toISOString()}`);
          },
        });
        const lease = await client.acquire(resource, { ttl: o.ttl, wait, holder: o.holder, lockDelay: o.lockDelay, shared: o.shared, maxHolders: o.maxHolders, preempt: o.preempt, signal: stop }).catch((err) => {
          if (stop.aborted) return undefined;
          throw err;
        });
        if (!lease) return EXIT.interrupted;
        const { token, ttlMs, validUntil } = lease;
        ctx.out.result(
          { event: "acquired", token: tokenToJson(token), tokenText: formatToken(token), ttlMs, validUntil },
          () =>
            `acquired "${resource}"${token.shared ? " shared" : ""}: token ${formatToken(token)} (generation ${token.generation}, ttl ${ttlMs / 1000} s); Ctrl-C releases it`,
        );
        const signal = lease.signal;
        if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        const end = signal.reason as LeaseLostError;
        await lease.release();
        if (end.why !== "canceled") throw end;
        ctx.out.result({ event: "released", token: tokenToJson(token) }, () => `released "${resource}" (generation ${token.generation})`);
      }),
    );
}

/** --max-holders: a whole number of permits, at least 1. */
function permits(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError(`--max-holders takes a whole number of permits, at least 1; got "${raw}"`);
  return n;
}
