// How every command runs: options of the whole program (--server, --json) into a client and an output,
// the command's outcome into an exit code, and any error into one line.
import type { Command } from "commander";
import { DEFAULT_URL, FencekeeperClient, type ClientOptions } from "../client/index.js";
import { EXIT, exitCodeOf } from "./exit-codes.js";
import { Output } from "./output.js";

export interface Context {
  readonly out: Output;
  /** The client, made on first use from --server. */
  client(options?: Omit<ClientOptions, "servers">): FencekeeperClient;
}

/** A commander action that runs `fn` with a Context and exits with what it returns (EXIT.ok by default). */
export function action<A extends unknown[]>(fn: (ctx: Context, ...args: A) => Promise<number | void>) {
  return async (...args: unknown[]): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const globals = cmd.optsWithGlobals() as { server: string; json?: boolean };
    const out = new Output(Boolean(globals.json));
    let client: FencekeeperClient | undefined;
    // A lease of its own: a command holds one lease at most, and a session would be a second lease to
    // keep for nothing (and Ctrl-C must release exactly that one).
    const ctx: Context = { out, client: (o) => (client ??= new FencekeeperClient({ sessions: false, ...o, servers: globals.server || DEFAULT_URL })) };
    let code: number;
    try {
      code = (await fn(ctx, ...(args.slice(0, -1) as A))) ?? EXIT.ok;
    } catch (err) {
      out.error(err);
      code = exitCodeOf(err);
    }
    await client?.close();
    process.exit(code);
  };
}

/** Aborts when the user presses Ctrl-C or the process is asked to stop. */
export function interruption(): AbortSignal {
  const stop = new AbortController();
  const abort = () => stop.abort();
  process.once("SIGINT", abort);
  process.once("SIGTERM", abort);
  return stop.signal;
}
