// Starts relay-server.ts as a process of its own, as a user's service would run, and gives a grpc-js
// client of it (the same client stack as fencekeeper's row). Compiled first (esbuild, its packages left
// to node_modules), as the server it is compared with runs compiled.
import { spawn } from "node:child_process";
import { build } from "esbuild";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { GrpcStore } from "./grpc-store.js";

const SOURCE = fileURLToPath(new URL("./relay-server.ts", import.meta.url));
/** Beside the sources, so that its imports resolve in node_modules; bench/results/ is not versioned. */
const COMPILED = fileURLToPath(new URL("./results/relay-server.mjs", import.meta.url));

export interface Relay {
  prefix: string;
  store: GrpcStore;
  pid: number;
  stop(): Promise<void>;
}

export async function startRelay(etcd: string, prefix: string): Promise<Relay> {
  await build({ entryPoints: [SOURCE], bundle: true, packages: "external", platform: "node", format: "esm", target: "node20", outfile: COMPILED, logLevel: "warning" });
  const child = spawn(process.execPath, [COMPILED, "--etcd", etcd, "--prefix", prefix], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the bare relay did not start within 20 s")), 20_000);
    child.once("exit", (code) => reject(new Error(`the bare relay exited (${code}) before it listened`)));
    lines.on("line", (line) => {
      const m = /^listening (\d+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  const store = new GrpcStore(`http://127.0.0.1:${port}`);
  return {
    prefix,
    store,
    pid: child.pid!,
    async stop() {
      store.close();
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await once(child, "exit");
      }
    },
  };
}
