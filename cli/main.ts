// The fencekeeper command: serve, hold leases, and use the fenced store from a shell.
import { Command, CommanderError, Option } from "commander";
import { DEFAULT_URL } from "../client/index.js";
import { acquireCommand } from "./commands/acquire.js";
import { describeCommand } from "./commands/describe.js";
import { fenceCommand } from "./commands/fence.js";
import { observeCommand } from "./commands/observe.js";
import { serveCommand } from "./commands/serve.js";
import { storeCommands } from "./commands/store.js";
import { exitCodeOf } from "./exit-codes.js";
import { Output } from "./output.js";

const oneLine = { outputError: (text: string, write: (s: string) => void) => write(`fencekeeper: ${text.replace(/^error: /, "")}`) };

const program = new Command("fencekeeper")
  .description("Leases with fencing tokens, and a key-value store that refuses stale generations")
  .addOption(new Option("--server <urls>", "server URL; several, comma-separated, are tried in turn").env("FENCEKEEPER_URL").default(DEFAULT_URL))
  .option("--json", "print JSON, one object per line")
  .configureOutput(oneLine)
  .exitOverride();

for (const cmd of [serveCommand(), acquireCommand(), ...storeCommands(), describeCommand(), observeCommand(), fenceCommand()]) {
  program.addCommand(cmd);
}
for (const cmd of program.commands) cmd.configureOutput(oneLine).exitOverride();

try {
  await program.parseAsync();
} catch (err) {
  // A CommanderError has printed its own one-line message already (or the help, for exit 0).
  if (!(err instanceof CommanderError)) new Output(false).error(err);
  process.exit(exitCodeOf(err));
}
