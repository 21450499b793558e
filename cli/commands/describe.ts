// fencekeeper describe: who holds a resource, with which token, for how long, how many wait, and its fence.
import { Command } from "commander";
import { formatToken, tokenToJson } from "../../client/index.js";
import { action } from "../run.js";

export function describeCommand(): Command {
  return new Command("describe")
    .description("show who holds a resource, with which token, for how long, how many wait, and its fence")
    .argument("<resource>")
    .action(
      action(async (ctx, resource: string) => {
        const d = await ctx.client().describe(resource);
        ctx.out.result(
          {
            resource,
            held: d.held,
            holder: d.holder,
            token: d.token && tokenToJson(d.token),
            ttlMs: d.ttlMs,
            waiters: d.waiters,
            fence: d.fence,
            lastIssued: d.lastIssued,
            lockDelayMs: d.lockDelay,
            lockDelayUntil: d.lockDelayUntil,
          },
          () => {
            const delay = d.lockDelay !== undefined ? `, lock-delay ${d.lockDelay / 1000} s` : "";
            const who = d.held && d.token
              ? `"${resource}" is held by "${d.holder}" with token ${formatToken(d.token)} (${(d.ttlMs ?? 0) / 1000} s left, ${d.waiters} waiting${delay})`
              : d.lockDelayUntil
                ? `"${resource}" is in a lock-delay until about ${d.lockDelayUntil.toISOString()}: its holder's lease expired (${d.waiters} waiting)`
                : `"${resource}" is free`;
            return `${who}\nfence ${d.fence}, last issued ${d.lastIssued}`;
          },
        );
      }),
    );
}
