// A fencekeeper server as its own process, on a free loopback port, against a given etcd.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface TestServer {
  readonly url: string;
  readonly process: ChildProcess;
  /** Every line the server logged so far. */
  readonly logs: string[];
  /** Sends a signal and waits for the process to exit; resolves with its exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface ServerOptions {
  etcd: string;
  /** A key prefix of its own, so that tests sharing an etcd do not see each other's state. */
  prefix?: string;
  args?: string[];
  env?: Record<string, string>;
  /** The program and its first arguments; default SERVER_COMMAND. E.g. ["bash", "scripts/start.sh"] for
   * `npm start`'s compiled server. */
  command?: string[];
}

/**
 * The server as the tests run it by default. Under scripts/test.sh (`npm test` and its tiers), whose setup
 * has just compiled dist/, FK_TEST_COMPILED=1: the compiled JavaScript, as users run it, which also starts
 * in half the CPU time of the sources through tsx. A test file run on its own (`npx mocha file`) runs the
 * sources, which need no build after an edit.
 */
export const SERVER_COMMAND: readonly string[] =
  process.env.FK_TEST_COMPILED === "1" ? [process.execPath, "dist/server/main.js"] : [process.execPath, "--import", "tsx", "server/main.ts"];

export async function startServer(o: ServerOptions): Promise<TestServer> {
  const prefix = o.prefix ?? `/fk-test-${randomBytes(4).toString("hex")}/`;
  const [program, ...first] = o.command ?? SERVER_COMMAND;
  const child = spawn(
    program,
    [...first, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--etcd", o.etcd, "--prefix", prefix, "--log-level", "debug", ...(o.args ?? [])],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...o.env } },
  );
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  createInterface({ input: child.stderr! }).on("line", (l) => logs.push(l));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => {
      logs.push(line);
      try {
        const entry = JSON.parse(line);
        if (entry.msg === "serving") resolve(entry.url);
      } catch {
        // not a log line
      }
    });
    exited.then((code) => reject(new Error(`server exited with ${code} before serving:\n${logs.join("\n")}`)));
  });
  return {
    url,
    process: child,
    logs,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        child.kill(signal);
      }
      return exited;
    },
  };
}
