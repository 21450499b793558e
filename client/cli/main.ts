// The fencekeeper command: serve, hold leases, and use the fenced store from a shell.
import { Command, Option } from "commander";
import { DEFAULT_URL } from "../client.js";
import { acquireCommand } from "./commands/acquire.js";
import { describeCommand } from "./commands/describe.js";
import { fenceCommand } from "./commands/fence.js";
import { observeCommand } from "./commands/observe.js";
import { serveCommand } from "./commands/serve.js";
import { storeCommands } from "./commands/store.js";
import { EXIT, exitCodeOf } from "./exit-codes.js";
import { Output } from "./output.js";

const program = new Command("fencekeeper")
  .description("Leases with fencing tokens, and a key-value store that refuses stale generations")
  .addOption(new Option("--server <urls>", "server URL; several, comma-separated, are tried in turn").env("FENCEKEEPER_URL").default(DEFAULT_URL))
  .option("--json", "print JSON, one object per line")
  .configureOutput({ outputError: (text, write) => write(`fencekeeper: ${text.replace(/^error: /, "")}`) });

for (const cmd of [serveCommand(), acquireCommand(), ...storeCommands(), describeCommand(), observeCommand(), fenceCommand()]) {
  program.addCommand(cmd);
}
for (const cmd of program.commands) {
  cmd.exitOverride();
  cmd.configureOutput({ outputError: (text, write) => write(`fencekeeper: ${text.replace(/^error: /, "")}`) });
}
program.exitOverride();

try {
  await program.parseAsync();
} catch (err) {
  const code = exitCodeOf(err);
  // commander has already printed its own one-line message (or the help, for exit 0).
  if (!(err instanceof Error && "exitCode" in err)) new Output(false).error(err);
  process.exit(code === EXIT.ok ? EXIT.ok : code);
}
