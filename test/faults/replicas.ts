// The fencekeeper server replicas of a fault run: each on a loopback port of its own (or in a network
// namespace of its own, netns.ts) that it keeps across restarts (so that clients, and the proxies in
// front of them, find it again), all given every endpoint of the etcd cluster and one key prefix.
// Started by the test harness's startServer.
import { freePort } from "../../server/etcd/embedded.js";
import { SERVER_COMMAND, startServer, type TestServer } from "../harness/server.js";
import type { Network } from "./netns.js";

export class Replica {
  server?: TestServer;

  private constructor(
    readonly name: string,
    readonly host: string,
    readonly port: number,
    private readonly etcd: string[],
    private readonly prefix: string,
    private readonly net?: Network,
    private readonly auth: string[] = [],
  ) {}

  /** With a network, in the namespace named as the replica is (netns.ts), on its address there; auth: its authentication and policy flags (auth.ts). */
  static async start(name: string, etcd: string[], prefix: string, net?: Network, auth: string[] = []): Promise<Replica> {
    const r = net ? new Replica(name, net.addr(name), 7000, etcd, prefix, net, auth) : new Replica(name, "127.0.0.1", await freePort(), etcd, prefix, undefined, auth);
    await r.restart();
    return r;
  }

  get url(): string {
    // With the run's TLS flags (auth.ts), clients reach it by https.
    return `${this.auth.includes("--tls-cert") ? "https" : "http"}://${this.host}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.server?.process.pid;
  }

  /** Starts it (again) on its port. */
  async restart(): Promise<void> {
    // The last --listen and --log-level win over startServer's own.
    this.server = await startServer({
      etcd: this.etcd.join(","),
      prefix: this.prefix,
      // An address of the run's own network, which only the harness's namespace reaches: no auth needed
      // (but the run authenticates its clients when given auth flags).
      args: ["--listen", `${this.host}:${this.port}`, "--log-level", "info", "--compaction-interval", "0", ...(this.auth.length > 0 ? this.auth : this.net ? ["--allow-unauthenticated", "on"] : [])],
      command: this.net ? [...this.net.command(this.name), ...SERVER_COMMAND] : undefined,
    });
  }

  /** SIGKILL: a crash, nothing cleaned up. */
  async kill(): Promise<void> {
    await this.server?.stop("SIGKILL");
    this.server = undefined;
  }

  async stop(): Promise<void> {
    await this.server?.stop("SIGTERM");
    this.server = undefined;
  }

  /** Keeps the last lines the server logged, so that a long run does not hold all of them. */
  trimLogs(keep = 200): void {
    const logs = this.server?.logs;
    if (logs && logs.length > keep) logs.splice(0, logs.length - keep);
  }
}
