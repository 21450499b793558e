// The fencekeeper servers a client may talk to: replicas sharing one etcd, any of which serves any
// call. One HTTP/2 connection per server, opened on first use; a failed server makes the next one current.
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { LeaseService } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../gen/ts/fencekeeper/v1/store_pb.js";

export interface Connection {
  readonly url: string;
  readonly lease: Client<typeof LeaseService>;
  readonly store: Client<typeof FencedStoreService>;
}

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

  connection(url: string = this.current): Connection {
    let c = this.open.get(url);
    if (!c) {
      const session = new Http2SessionManager(url);
      const transport = createGrpcTransport({ baseUrl: url, sessionManager: session });
      c = { session, connection: { url, lease: createClient(LeaseService, transport), store: createClient(FencedStoreService, transport) } };
      this.open.set(url, c);
    }
    return c.connection;
  }

  /** Drops the connection to `url`: its calls fail, and the next call opens a fresh connection. */
  reset(url: string): void {
    const c = this.open.get(url);
    this.open.delete(url);
    c?.session.abort();
  }

  close(): void {
    for (const url of [...this.open.keys()]) this.reset(url);
  }
}
