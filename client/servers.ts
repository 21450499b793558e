// The fencekeeper servers a client may talk to: replicas sharing one etcd, any of which serves any
// call. A failed server makes the next one current. Each server gets two HTTP/2 connections, opened on
// first use: one for calls and one for the KeepAlive stream, so that dropping a hung stream's connection
// leaves the calls on the other be.
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { LeaseService } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../gen/ts/fencekeeper/v1/store_pb.js";

export interface Connection {
  readonly url: string;
  readonly lease: Client<typeof LeaseService>;
  readonly store: Client<typeof FencedStoreService>;
}

/** Which of a server's two connections. */
export type Channel = "calls" | "stream";

export class Servers {
  readonly urls: readonly string[];
  private index = 0;
  private readonly open = new Map<string, { connection: Connection; session: Http2SessionManager }>();

  constructor(urls: readonly string[]) {
    if (urls.length === 0) throw new RangeError("at least one server URL is needed");
    for (const url of urls) {
      if (!/^https?:\/\/[^/\s]+\/?$/.test(url)) throw new RangeError(`a server URL looks like http://127.0.0.1:50051, got "${url}"`);
    }
    this.urls = urls.map((u) => u.replace(/\/$/, ""));
  }

  get current(): string {
    return this.urls[this.index];
  }

  /** Moves on to the next server, if `url` is still the current one. */
  failed(url: string): void {
    if (this.current === url) this.index = (this.index + 1) % this.urls.length;
  }

  connection(channel: Channel, url: string = this.current): Connection {
    const id = `${channel} ${url}`;
    let c = this.open.get(id);
    if (!c) {
      const session = new Http2SessionManager(url);
      const transport = createGrpcTransport({ baseUrl: url, sessionManager: session });
      c = { session, connection: { url, lease: createClient(LeaseService, transport), store: createClient(FencedStoreService, transport) } };
      this.open.set(id, c);
    }
    return c.connection;
  }

  /** Drops a connection: its calls fail, and the next call on that channel opens a fresh one. */
  reset(channel: Channel, url: string): void {
    const id = `${channel} ${url}`;
    const c = this.open.get(id);
    this.open.delete(id);
    c?.session.abort();
  }

  close(): void {
    for (const c of this.open.values()) c.session.abort();
    this.open.clear();
  }
}
