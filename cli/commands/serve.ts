// fencekeeper serve: the server's own command line (server/command.ts), the one `npm start` runs.
import type { Command } from "commander";
import { serverCommand } from "../../server/command.js";

export function serveCommand(): Command {
  return serverCommand("serve", async () => (await import("../../server/main.js")).serve);
}
