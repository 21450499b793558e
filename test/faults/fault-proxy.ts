// A TCP proxy on loopback between one client and one server replica, that the nemesis can turn into a
// bad network: delay every chunk, stall (hold every byte, both ways, until healed: the connection stays
// open and silent, as behind a partition that drops packets), or cut (reset every connection and refuse
// new ones until healed). Bytes keep their order whatever the mode.
import net from "node:net";

export type ProxyMode = { kind: "pass" } | { kind: "delay"; ms: number } | { kind: "stall" } | { kind: "cut" };

export class FaultProxy {
  private mode: ProxyMode = { kind: "pass" };
  private readonly sockets = new Set<net.Socket>();
  private readonly relays = new Set<Relay>();

  private constructor(
    private readonly server: net.Server,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<FaultProxy> {
    // The scheme is the target's: a TLS connection passes through the proxy untouched.
    const { hostname, port, protocol } = new URL(target);
    let proxy: FaultProxy | undefined;
    const server = net.createServer((client) => proxy!.accept(client, () => net.connect(Number(port), hostname)));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    proxy = new FaultProxy(server, `${protocol}//127.0.0.1:${(server.address() as net.AddressInfo).port}`);
    return proxy;
  }

  set(mode: ProxyMode): void {
    this.mode = mode;
    if (mode.kind === "cut") for (const s of this.sockets) s.resetAndDestroy();
    for (const r of this.relays) r.kick();
  }

  heal(): void {
    this.set({ kind: "pass" });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket, connect: () => net.Socket): void {
    if (this.mode.kind === "cut") {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect();
    for (const s of [client, upstream]) {
      s.setNoDelay(true);
      this.sockets.add(s);
      s.once("close", () => this.sockets.delete(s));
      s.on("error", () => {});
    }
    const a = new Relay(client, upstream, () => this.mode);
    const b = new Relay(upstream, client, () => this.mode);
    for (const r of [a, b]) {
      this.relays.add(r);
      r.from.once("close", () => this.relays.delete(r));
    }
  }
}

/** Copies from → to: each chunk when the mode in force lets it go, never before an earlier one. */
class Relay {
  private readonly queue: { due: number; chunk: Buffer }[] = [];
  private timer?: NodeJS.Timeout;
  private ended = false;

  constructor(
    readonly from: net.Socket,
    private readonly to: net.Socket,
    private readonly mode: () => ProxyMode,
  ) {
    from.on("data", (chunk: Buffer) => {
      const m = mode();
      const delay = m.kind === "delay" ? m.ms : 0;
      this.queue.push({ due: Math.max(Date.now() + delay, this.queue.at(-1)?.due ?? 0), chunk });
      this.kick();
    });
    from.once("end", () => {
      this.ended = true;
      this.kick();
    });
    from.once("close", () => {
      if (!this.ended) to.destroy();
    });
  }

  /** Sends what is due, unless stalled; called on new data and on every change of mode. */
  kick(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.mode().kind === "stall") return;
    while (this.queue.length > 0 && this.queue[0].due <= Date.now()) {
      const { chunk } = this.queue.shift()!;
      if (!this.to.destroyed) this.to.write(chunk);
    }
    if (this.queue.length > 0) this.timer = setTimeout(() => this.kick(), this.queue[0].due - Date.now());
    else if (this.ended && !this.to.destroyed) this.to.end();
  }
}
