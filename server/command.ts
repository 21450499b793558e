// The server's command line, the one way from argv to serve(): `npm start`, the container image and
// `node server/main.ts` run it as the program "fencekeeper-server", and the CLI adds it as `fencekeeper
// serve` (cli/commands/serve.ts). Only commander and the configuration load with it; the server's own
// modules load when the command runs (`load`, given by the caller: main.ts imports this module, so this
// one does not import main.ts), so that the CLI's other commands start quickly.
import { Command } from "commander";
import { serveOptions, toConfig, type Config } from "./config.js";
import { ConfigError } from "./errors/config-error.js";

type Serve = (config: Config) => Promise<void>;

export function serverCommand(name: string, load: () => Promise<Serve>): Command {
  const cmd = serveOptions(new Command(name).description("serve LeaseService and FencedStoreService (embedded etcd unless --etcd)"));
  return cmd.action(async () => {
    try {
      const config = toConfig(cmd.opts());
      const serve = await load();
      await serve(config);
    } catch (err) {
      // A bad setting (ConfigError) or a server that cannot start: one line, exit code 1.
      process.stderr.write(`fencekeeper: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    }
  });
}
