// fencekeeper serve: the server, with the same options as server/main.ts.
import { Command } from "commander";
import { serveOptions, toConfig } from "../../../server/config.js";
import { serve } from "../../../server/main.js";

export function serveCommand(): Command {
  const cmd = serveOptions(new Command("serve").description("serve LeaseService and FencedStoreService (embedded etcd unless --etcd)"));
  return cmd.action(async () => {
    try {
      await serve(toConfig(cmd.opts()));
    } catch (err) {
      process.stderr.write(`fencekeeper: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    }
  });
}
