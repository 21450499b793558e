// A throwaway fencekeeper for the demo: etcd on free loopback ports in a temporary folder, and a server
// process (the fencekeeper CLI's serve) on a free port. stop() ends both and removes the folder; a server
// that fails to start leaves the folder, with its log.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, createWriteStream } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { startEmbeddedEtcd } from "../server/etcd/embedded.js";

const CLI = fileURLToPath(new URL("../bin/fencekeeper.js", import.meta.url));

export interface DemoServer {
  readonly url: string;
  readonly dir: string;
  stop(): Promise<void>;
}

export async function startDemoServer(): Promise<DemoServer> {
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-demo-"));
  const etcd = await startEmbeddedEtcd({ dataDir: join(dir, "etcd") }).catch((err) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  const server = spawn(
    process.execPath,
    [CLI, "serve", "--listen", "127.0.0.1:0", "--etcd", etcd.endpoint, "--prefix", "/fencekeeper-demo/", "--shutdown-grace", "1000", "--metrics-listen", "off"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const log = createWriteStream(join(dir, "server.log"));
  server.stderr!.pipe(log);
  const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
  const halt = async () => {
    if (server.exitCode === null && server.signalCode === null) server.kill("SIGTERM");
    await exited;
    await etcd.stop();
  };
  const stop = async () => {
    await halt();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: server.stdout! }).on("line", (line) => {
        log.write(line + "\n");
        if (line.includes('"msg":"serving"')) resolve(JSON.parse(line).url);
      });
      void exited.then(() => reject(new Error(`the server exited before serving; see ${join(dir, "server.log")}`)));
    });
    return { url, dir, stop };
  } catch (err) {
    await halt();
    throw err;
  }
}
