// fencekeeper serve: the server, with the same options as server/main.ts. The server's modules load only
// when it runs, so that the other commands start quickly.
import { Command } from "commander";
import { serveOptions, toConfig } from "../../../server/config.js";

export function serveCommand(): Command {
  const cmd = serveOptions(new Command("serve").description("serve LeaseService and FencedStoreService (embedded etcd unless --etcd)"));
  return cmd.action(async () => {
    try {
      const { serve } = await import("../../../server/main.js");
      await serve(toConfig(cmd.opts()));
    } catch (err) {
      process.stderr.write(`fencekeeper: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    }
  });
}
