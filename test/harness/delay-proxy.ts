// A TCP proxy on loopback that can hold back the bytes of either direction: a slow network between a
// client and a server, for tests. Bytes keep their order; a delay applies to what arrives from then on.
import net from "node:net";

export type Direction = "toServer" | "toClient";

export interface DelayProxy {
  /** The proxy's address, as a base URL for clients. */
  readonly url: string;
  /** Delays the bytes going one way (or both) by `ms` from now on. */
  setDelay(ms: number, direction?: Direction | "both"): void;
  /** Bytes the clients have sent through the proxy so far (what reached, or is on its way to, the server). */
  bytesToServer(): number;
  /** Resets every connection through the proxy now (TCP RST both ways); new connections are still taken. */
  cut(): void;
  close(): Promise<void>;
}

export async function startDelayProxy(target: string): Promise<DelayProxy> {
  const { hostname, port } = new URL(target);
  const delay: Record<Direction, number> = { toServer: 0, toClient: 0 };
  const sockets = new Set<net.Socket>();
  let toServer = 0;

  const server = net.createServer((client) => {
    client.on("data", (chunk: Buffer) => (toServer += chunk.length));
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once("close", () => sockets.delete(s));
    }
    relay(client, upstream, () => delay.toServer);
    relay(upstream, client, () => delay.toClient);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as net.AddressInfo;

  return {
    url: `http://127.0.0.1:${address.port}`,
    setDelay(ms, direction = "both") {
      if (direction !== "toClient") delay.toServer = ms;
      if (direction !== "toServer") delay.toClient = ms;
    },
    bytesToServer: () => toServer,
    cut() {
      for (const s of sockets) s.resetAndDestroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Copies from → to, each chunk after the delay in force when it arrived, never overtaking an earlier one. */
function relay(from: net.Socket, to: net.Socket, delayMs: () => number): void {
  const queue: { due: number; chunk: Buffer }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const drain = () => {
    timer = undefined;
    if (to.destroyed) {
      queue.length = 0;
      return;
    }
    while (queue.length > 0 && queue[0].due <= Date.now()) {
      const { chunk } = queue.shift()!;
      if (!to.destroyed) to.write(chunk);
    }
    if (queue.length > 0) timer = setTimeout(drain, queue[0].due - Date.now());
    else if (ended) to.end();
  };
  from.on("data", (chunk: Buffer) => {
    if (to.destroyed) return;
    const last = queue.at(-1)?.due ?? 0;
    queue.push({ due: Math.max(Date.now() + delayMs(), last), chunk });
    if (!timer) drain();
  });
  from.once("end", () => {
    ended = true;
    if (!timer) drain();
  });
  from.once("error", () => to.destroy());
  // Nothing held back can be delivered once the receiving side is gone: its timer goes too.
  to.once("close", () => {
    clearTimeout(timer);
    timer = undefined;
    queue.length = 0;
  });
  from.once("close", () => {
    if (!ended) to.destroy();
  });
}
