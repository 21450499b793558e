// Starts the server process and waits for it to exit, for settings it must refuse before serving.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { SERVER_COMMAND } from "../../harness/server.js";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

export interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the server (SERVER_COMMAND: compiled under scripts/test.sh) with args and env until it exits. A server that logs "serving" gets SIGTERM; one
 * that does neither within timeoutMs is killed.
 */
export function runServer(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<Exit> {
  const [program, ...first] = SERVER_COMMAND;
  const child = spawn(program, [...first, ...args], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => {
    stdout += d;
    if (stdout.includes('"msg":"serving"')) child.kill("SIGTERM");
  });
  child.stderr.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return new Promise((resolve) =>
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}
