// A single-node etcd run as a child process: the server's embedded default, and the test harness's etcd.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createServer, type Server } from "node:net";

/** The --max-request-bytes the embedded etcd runs with: room for a Txn of 1 MiB of values, and batches. */
export const EMBEDDED_ETCD_MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/**
 * The --quota-backend-bytes the embedded etcd runs with (etcd's own default, said explicitly): past it
 * etcd raises NOSPACE and refuses writes. The server compacts etcd (compactor.ts) and bounds what each
 * resource stores (--max-bytes-per-resource), so that this is reached only by many resources together.
 */
export const EMBEDDED_ETCD_QUOTA_BACKEND_BYTES = 2 * 1024 * 1024 * 1024;

/** The one command that installs etcd, for messages to people. */
export const ETCD_INSTALL_HINT = "sudo apt-get install -y etcd-server   (Debian/Ubuntu; or put an etcd 3.4+ binary on PATH)";

export class EtcdMissingError extends Error {
  constructor(binary: string) {
    super(`etcd was not found (looked for "${binary}" on PATH). Install it with:\n  ${ETCD_INSTALL_HINT}`);
    this.name = "EtcdMissingError";
  }
}

export interface EmbeddedEtcdOptions {
  /** Where etcd keeps its data; survives restarts when reused. */
  dataDir: string;
  /** Loopback client port; 0 picks a free one. */
  clientPort?: number;
  /** Loopback peer port; 0 picks a free one. */
  peerPort?: number;
  /** The etcd binary; default "etcd" from PATH. */
  binary?: string;
  /** Where etcd's own log goes; default <dataDir>/etcd.log. */
  logFile?: string;
  /** etcd's --quota-backend-bytes; default EMBEDDED_ETCD_QUOTA_BACKEND_BYTES. */
  quotaBackendBytes?: number;
}

export interface EmbeddedEtcd {
  readonly endpoint: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly dataDir: string;
  readonly process: ChildProcess;
  /** Stops etcd (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>;
}

export function etcdAvailable(binary = "etcd"): boolean {
  const r = spawnSync(binary, ["--version"], { stdio: "ignore" });
  return r.status === 0;
}

/** A port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0];
}

/**
 * n distinct ports free on 127.0.0.1 right now: each is held until all are picked, so that the kernel
 * cannot hand the same one out twice.
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () =>
      new Promise<Server>((resolve, reject) => {
        const srv = createServer();
        srv.unref();
        srv.on("error", reject);
        srv.listen(0, "127.0.0.1", () => resolve(srv));
      }),
    ),
  );
  const ports = servers.map((srv) => {
    const addr = srv.address();
    return typeof addr === "object" && addr ? addr.port : 0;
  });
  await Promise.all(servers.map((srv) => new Promise<void>((resolve) => srv.close(() => resolve()))));
  return ports;
}

/**
 * How often etcd is started again on other ports when a port picked for it was taken by someone else
 * between the pick and etcd's bind (another process picking free ports at the same moment).
 */
const PORT_ATTEMPTS = 3;

export async function startEmbeddedEtcd(opts: EmbeddedEtcdOptions): Promise<EmbeddedEtcd> {
  const binary = opts.binary ?? "etcd";
  if (!etcdAvailable(binary)) throw new EtcdMissingError(binary);
  mkdirSync(opts.dataDir, { recursive: true });
  const memberData = join(opts.dataDir, "member-data");
  // A member that existed before this start keeps its data whatever happens here.
  const fresh = !existsSync(memberData);
  for (let attempt = 1; ; attempt++) {
    const [clientPort, peerPort] = await pickPorts(opts.clientPort, opts.peerPort);
    try {
      return await startOnce(binary, opts, clientPort, peerPort);
    } catch (err) {
      const picked = !opts.clientPort || !opts.peerPort;
      if (!(err instanceof PortTaken) || !picked || attempt === PORT_ATTEMPTS) throw err;
      // The member etcd began to create on the taken ports would keep their URLs: start afresh.
      if (fresh) rmSync(memberData, { recursive: true, force: true });
    }
  }
}

/** The ports asked for, and distinct free ones for those left 0. */
async function pickPorts(client = 0, peer = 0): Promise<[number, number]> {
  const [a, b] = await freePorts(2);
  return [client || (a === peer ? b : a), peer || (b === client ? a : b)];
}

/** etcd exited at start because one of its ports was in use. */
class PortTaken extends Error {}

async function startOnce(binary: string, opts: EmbeddedEtcdOptions, clientPort: number, peerPort: number): Promise<EmbeddedEtcd> {
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    "--name", "fencekeeper",
    "--data-dir", join(opts.dataDir, "member-data"),
    "--listen-client-urls", client,
    "--advertise-client-urls", client,
    "--listen-peer-urls", peer,
    "--initial-advertise-peer-urls", peer,
    "--initial-cluster", `fencekeeper=${peer}`,
    "--initial-cluster-state", "new",
    "--max-request-bytes", String(EMBEDDED_ETCD_MAX_REQUEST_BYTES),
    "--quota-backend-bytes", String(opts.quotaBackendBytes ?? EMBEDDED_ETCD_QUOTA_BACKEND_BYTES),
    "--log-level", "warn",
  ];
  const logFile = opts.logFile ?? join(opts.dataDir, "etcd.log");
  const log = createWriteStream(logFile, { flags: "a" });
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ETCD_UNSUPPORTED_ARCH: process.env.ETCD_UNSUPPORTED_ARCH ?? "" } });
  // Both streams into one file, ended once both are drained ("close"): the first stream to end must not
  // end the file under the other's last lines (a write after end is thrown in whatever runs then). A
  // log that cannot be written (its folder removed) is not a reason for this process to fail.
  log.on("error", () => {});
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  child.once("close", () => log.end());
  // The end of what etcd said, for the error when it exits at start (its log may be on another machine).
  let said = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    said = (said + chunk.toString("utf8")).slice(-4096);
  });
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  // However this process ends (short of SIGKILL), etcd does not outlive it.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.removeListener("exit", killOnExit));
  let exitedEarly = false;
  child.once("exit", () => { exitedEarly = true; });

  const deadline = Date.now() + 20_000;
  for (;;) {
    if (exitedEarly) {
      await closed;
      const last = said.trim().split("\n").slice(-3).join("\n");
      const message = `etcd exited at start (code ${child.exitCode}); see ${logFile}. It said:\n${last}`;
      throw /address already in use/.test(said) ? new PortTaken(message) : new Error(message);
    }
    if (await healthy(client)) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`etcd did not become healthy on ${client} within 20 s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    endpoint: client,
    clientPort,
    peerPort,
    dataDir: opts.dataDir,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await closed;
      clearTimeout(t);
    },
  };
}

async function healthy(client: string): Promise<boolean> {
  try {
    const res = await fetch(`${client}/health`, { signal: AbortSignal.timeout(1_000) });
    if (!res.ok) return false;
    const body = (await res.json()) as { health?: string };
    return body.health === "true";
  } catch {
    return false;
  }
}
