// fencekeeper fence: the greatest generation the store has accepted for a resource, and the last issued.
import { Command } from "commander";
import { action } from "../run.js";

export function fenceCommand(): Command {
  return new Command("fence")
    .description("show a resource's fence (the greatest generation its store accepted) and the last generation issued")
    .argument("<resource>")
    .action(
      action(async (ctx, resource: string) => {
        const f = await ctx.client().store.fence(resource);
        ctx.out.result({ resource, fence: f.fence, lastIssued: f.lastIssued }, () => `fence ${f.fence}, last issued ${f.lastIssued}`);
      }),
    );
}
