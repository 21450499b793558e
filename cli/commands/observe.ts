// fencekeeper observe: print the holder of a resource now, then every handover, until Ctrl-C.
import { Command } from "commander";
import { formatToken, tokenToJson } from "../../client/index.js";
import { action, interruption } from "../run.js";

export function observeCommand(): Command {
  return new Command("observe")
    .description("print who holds a resource now, then every handover, until Ctrl-C")
    .argument("<resource>")
    .action(
      action(async (ctx, resource: string) => {
        const signal = interruption();
        for await (const o of ctx.client().observe(resource, { signal })) {
          const at = new Date();
          ctx.out.result(
            {
              at,
              resource,
              held: o.held,
              holder: o.holder,
              token: o.token && tokenToJson(o.token),
              holders: o.holders.map((h) => ({ holder: h.holder, token: tokenToJson(h.token) })),
              revision: o.revision,
            },
            () =>
              `${at.toISOString()}  revision ${o.revision}  ` +
              (o.held && o.token
                ? `held by "${o.holder}" with token ${formatToken(o.token)}`
                : o.held
                  ? `held shared by ${o.holders.map((h) => `"${h.holder}"`).join(", ")}` +
                    o.joined.map((h) => `; "${h.holder}" joined`).join("") +
                    o.left.map((h) => `; "${h.holder}" left`).join("")
                  : "free"),
          );
        }
      }),
    );
}
