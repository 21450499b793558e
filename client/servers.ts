// The fencekeeper servers a client may talk to: replicas sharing one etcd, any of which serves any
// call. A failed server makes the next one current. Each server gets two HTTP/2 connections, opened on
// first use: one for calls and one for the KeepAlive stream, so that dropping a hung stream's connection
// leaves the calls on the other be.
import type { ClientSessionOptions, SecureClientSessionOptions } from "node:http2";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { LeaseService } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../gen/ts/fencekeeper/v1/store_pb.js";
import { createGrpcJsTransport } from "./grpc-js-transport.js";
import { traceContext } from "./trace-context.js";

export interface Connection {
  readonly url: string;
  readonly lease: Client<typeof LeaseService>;
  readonly store: Client<typeof FencedStoreService>;
}

/** How the client proves who it is to a server with authentication on. */
export interface Credentials {
  /** A bearer JWT, sent with every call; or a function giving the current one (called per call: keep it cheap). */
  bearer?: string | (() => string | Promise<string>);
  /** For https:// servers: the CA to trust (PEM; default: the system's), and a client certificate and key for mutual TLS. */
  tls?: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer };
}

function bearer(token: NonNullable<Credentials["bearer"]>): Interceptor {
  return (next) => async (req) => {
    req.header.set("authorization", `Bearer ${typeof token === "string" ? token : await token()}`);
    return next(req);
  };
}

/** Which of a server's two connections. */
export type Channel = "calls" | "stream";

export class Servers {
  readonly urls: readonly string[];
  private index = 0;
  private readonly open = new Map<string, { connection: Connection; close(): void }>();

  private readonly interceptors: Interceptor[];
  private readonly sessionOptions?: ClientSessionOptions | SecureClientSessionOptions;
  private readonly tls?: Credentials["tls"];

  constructor(
    urls: readonly string[],
    credentials: Credentials = {},
    interceptors: readonly Interceptor[] = [],
    /** The library of unary calls on the "calls" connection (grpc-js-transport.ts). */
    private readonly unary: "grpc-js" | "connect" = "grpc-js",
  ) {
    this.tls = credentials.tls;
    this.interceptors = [traceContext, ...(credentials.bearer !== undefined ? [bearer(credentials.bearer)] : []), ...interceptors];
    this.sessionOptions = credentials.tls;
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
      const session = new Http2SessionManager(url, undefined, this.sessionOptions);
      const streams = createGrpcTransport({ baseUrl: url, sessionManager: session, interceptors: this.interceptors });
      const unary = channel === "calls" && this.unary === "grpc-js" ? createGrpcJsTransport({ baseUrl: url, interceptors: this.interceptors, tls: this.tls, streams }) : undefined;
      const transport = unary ?? streams;
      const close = () => {
        unary?.close();
        session.abort();
      };
      c = { close, connection: { url, lease: createClient(LeaseService, transport), store: createClient(FencedStoreService, transport) } };
      this.open.set(id, c);
    }
    return c.connection;
  }

  /** Drops a connection: its calls fail, and the next call on that channel opens a fresh one. */
  reset(channel: Channel, url: string): void {
    const id = `${channel} ${url}`;
    const c = this.open.get(id);
    this.open.delete(id);
    c?.close();
  }

  close(): void {
    for (const c of this.open.values()) c.close();
    this.open.clear();
  }
}
