// One port for every protocol: gRPC, and Connect or gRPC-Web, over HTTP/2 or HTTP/1.1.
//
// Cleartext: the first bytes of a connection tell which HTTP it speaks, since an HTTP/2 connection with
// prior knowledge (h2c, as gRPC clients and meshes' sidecars use) opens with the preface "PRI * HTTP/2.0".
// TLS: ALPN settles it (h2 or http/1.1); with a client CA, clients must present a certificate it signed.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";

/** An address to listen on. */
export interface HostPort {
  host: string;
  port: number;
}

/** Whether a host names this machine's loopback: a listener there is reachable from this machine alone. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The port's TLS: its certificate and key, and with clientCa, mutual TLS (config.ts reads them). */
export interface ServerTls {
  cert: { pem: Buffer };
  key: { pem: Buffer };
  /** Set: clients must present a certificate signed by this CA (mutual TLS). */
  clientCa?: { pem: Buffer };
}

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\n");

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;
export type Handler = (req: Request, res: Response) => void;

export interface ListenOptions {
  host: string;
  port: number;
  tls?: ServerTls;
  /** How long a new connection has to say what it is: TLS handshake, HTTP/2 preface, HTTP/1.1 request headers. */
  handshakeTimeoutMs: number;
  /** An HTTP/2 connection with no stream open and no frame for this long is closed (GOAWAY). */
  idleTimeoutMs: number;
  /** Streams one HTTP/2 connection may have open at once (its SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
  /**
   * How long a request has, from its headers, to arrive whole: a request still incomplete then is cut
   * (HTTP/2: RST_STREAM CANCEL; HTTP/1.1: the connection closes). Requests on the paths of
   * requestStreams, whose bodies are streams of messages (KeepAlive), are not bound by it.
   */
  requestReadTimeoutMs: number;
  /** Paths (/package.Service/Method) of the methods whose requests are streams. */
  requestStreams: ReadonlySet<string>;
}

export interface Transport {
  readonly address: AddressInfo;
  /** "https" with TLS, else "http". */
  readonly scheme: "http" | "https";
  /**
   * Stops taking new calls: the port closes, HTTP/2 connections get GOAWAY (their open streams go on),
   * HTTP/1.1 connections close after the response in progress, and new HTTP/1.1 requests get 503.
   */
  stopAccepting(): void;
  /** Closes every connection now. */
  destroy(): void;
  /** Resolves once every connection has closed. */
  closed(): Promise<void>;
}

export async function listen(o: ListenOptions, handler: Handler): Promise<Transport> {
  let accepting = true;
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.Http2Session>();
  const h1Responses = new Set<http.ServerResponse>();

  // HTTP/1.1 has no GOAWAY: a connection is told to close with the response it carries.
  const serve: Handler = (req, res) => {
    if (!o.requestStreams.has((req.url ?? "").split("?")[0])) limitRead(req, o.requestReadTimeoutMs);
    if (req.httpVersionMajor === 1) {
      const r = res as http.ServerResponse;
      if (!accepting) {
        r.writeHead(503, { connection: "close", "content-type": "text/plain" }).end("fencekeeper is shutting down; call another replica\n");
        return;
      }
      h1Responses.add(r);
      r.once("close", () => h1Responses.delete(r));
    } else {
      releaseAfterAnswer(req as http2.Http2ServerRequest);
    }
    handler(req, res);
  };
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const onSession = (s: http2.Http2Session) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
    closeWhenIdle(s, o.idleTimeoutMs);
  };

  const { server, closeIdleHttp1 } = o.tls ? secureServer(o, o.tls, serve, track, onSession) : cleartextServer(o, serve, track, onSession);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
  const closed = new Promise<void>((resolve) => server.once("close", () => resolve()));

  return {
    address: server.address() as AddressInfo,
    scheme: o.tls ? "https" : "http",
    stopAccepting() {
      accepting = false;
      server.close();
      for (const s of sessions) s.close();
      for (const r of h1Responses) if (!r.headersSent) r.setHeader("connection", "close");
      closeIdleHttp1();
    },
    destroy() {
      for (const s of sockets) s.destroy();
    },
    closed: () => closed,
  };
}

interface Listener {
  server: net.Server;
  /** Closes the HTTP/1.1 keep-alive connections that carry no request now. */
  closeIdleHttp1(): void;
}

/**
 * Closes an HTTP/2 connection that has carried no frame for ms while no stream is open (a client that
 * opened a connection and went quiet holds a file descriptor for nothing). A quiet stream, such as an
 * Observe of a resource that does not change, keeps its connection.
 */
function closeWhenIdle(session: http2.Http2Session, ms: number): void {
  let open = 0;
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    open++;
    stream.once("close", () => open--);
  });
  session.setTimeout(ms, () => {
    if (open === 0) session.close();
  });
}

/**
 * Once a call has been answered, the client's side of its stream is let go soon after, read or not. A
 * stream the server ended early (a KeepAlive refused for an unreadable message, say) stops reading its
 * client's messages; unread, they would keep the HTTP/2 stream, and with it the connection, open after
 * the client half-closes or leaves, for as long as the server runs. So a stream still open a grace
 * period after its answer is let go: destroyed, when both sides have ended it on the wire and only
 * unread bytes hold it; else closed with RST_STREAM(NO_ERROR), as gRPC's own servers close a stream whose
 * client has not finished when the call has.
 */
function releaseAfterAnswer(req: http2.Http2ServerRequest): void {
  const stream = req.stream;
  // The stream's own end of writing: a trailers-only answer is sent on the stream, past the response.
  stream.once("finish", () => {
    // Unary calls read their whole request before answering: nothing is left to hold them.
    if (req.readableEnded) return;
    const timer = setTimeout(() => {
      if (stream.destroyed) return;
      if (stream.closed) stream.destroy();
      else stream.close(http2.constants.NGHTTP2_NO_ERROR);
    }, UNREAD_GRACE_MS).unref();
    stream.once("close", () => clearTimeout(timer));
  });
}

const timedOut = new WeakSet<Request>();

/** The request was cut because it did not arrive whole within the read limit. */
export function readTimedOut(req: Request): boolean {
  return timedOut.has(req);
}

/**
 * A request must arrive whole within ms of its headers. Unread, a body that never ends (or trickles a
 * byte a second) would hold its stream, its buffers and, before authentication, no one's quota, for as
 * long as the client likes; HTTP/2 counts a connection with an open stream as busy, never idle.
 */
function limitRead(req: Request, ms: number): void {
  if (arrived(req)) return;
  const timer = setTimeout(() => {
    if (arrived(req)) return;
    timedOut.add(req);
    if (req.httpVersionMajor === 2) {
      const stream = (req as http2.Http2ServerRequest).stream;
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    } else {
      req.socket.destroy();
    }
  }, ms);
  timer.unref();
  req.once("close", () => clearTimeout(timer));
  req.once("end", () => clearTimeout(timer));
}

/** The client has sent the whole request (whether or not the server has read it). */
function arrived(req: Request): boolean {
  if (req.httpVersionMajor === 2) {
    const stream = (req as http2.Http2ServerRequest).stream;
    return stream.destroyed || stream.state?.remoteClose === 1 || req.readableEnded;
  }
  return (req as http.IncomingMessage).complete;
}

/** How long a stream may stay open after its call has been answered. */
const UNREAD_GRACE_MS = 2_000;

/** HTTP/1.1 connections: request headers within the handshake timeout, and the whole request soon after. */
function limitHttp1(h1: http.Server, o: ListenOptions): void {
  h1.headersTimeout = o.handshakeTimeoutMs;
  h1.requestTimeout = Math.max(o.handshakeTimeoutMs, o.requestReadTimeoutMs);
}

function cleartextServer(o: ListenOptions, serve: Handler, track: (s: net.Socket) => void, onSession: (s: http2.Http2Session) => void): Listener {
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: o.maxConcurrentStreams } }, serve as never);
  // Timeouts checked every second: a header trickled in gets at most a second past headersTimeout.
  const h1 = http.createServer({ connectionsCheckingInterval: 1000 }, serve as never);
  limitHttp1(h1, o);
  // Node checks headersTimeout and requestTimeout, and keeps the list of connections that
  // closeIdleConnections() closes, only from the moment its server listens. This one never listens (it is
  // handed its connections), so it is told it does.
  h1.emit("listening");
  // A connection that has not completed its first request's headers within the handshake timeout of its
  // handover is dropped here, to the moment (Node's own check above runs once a second).
  const firstRequest = new WeakMap<net.Socket, NodeJS.Timeout>();
  h1.on("request", (req: http.IncomingMessage) => {
    clearTimeout(firstRequest.get(req.socket));
    firstRequest.delete(req.socket);
  });
  h2.on("session", onSession);
  // No Nagle: an answer's frames (headers, message, trailers) go out as they are written, not held back
  // until the client acknowledges the previous ones.
  const server = net.createServer({ noDelay: true }, (socket) => {
    track(socket);
    socket.once("error", () => socket.destroy());
    let head = Buffer.alloc(0);
    // A connection that does not send enough to tell its protocol in time is dropped: silent ones, and
    // ones that stop in the middle of the HTTP/2 preface, would otherwise hold their descriptor for good.
    const silent = setTimeout(() => socket.destroy(), o.handshakeTimeoutMs);
    socket.once("close", () => clearTimeout(silent));
    const sniff = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      if (n < H2_PREFACE.length && head.subarray(0, n).equals(H2_PREFACE.subarray(0, n))) return; // need more
      socket.removeListener("data", sniff);
      clearTimeout(silent);
      socket.pause();
      socket.unshift(head);
      // Each server takes the socket over with the bytes already read put back in front.
      if (head.subarray(0, n).equals(H2_PREFACE.subarray(0, n))) {
        h2.emit("connection", socket);
      } else {
        const t = setTimeout(() => socket.destroy(), o.handshakeTimeoutMs);
        firstRequest.set(socket, t);
        socket.once("close", () => clearTimeout(t));
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", sniff);
  });
  return { server, closeIdleHttp1: () => h1.closeIdleConnections() };
}

function secureServer(
  o: ListenOptions,
  tls: ServerTls,
  serve: Handler,
  track: (s: net.Socket) => void,
  onSession: (s: http2.Http2Session) => void,
): Listener {
  const server = http2.createSecureServer(
    {
      cert: tls.cert.pem,
      key: tls.key.pem,
      ca: tls.clientCa?.pem,
      requestCert: tls.clientCa !== undefined,
      rejectUnauthorized: tls.clientCa !== undefined,
      // ALPN offers h2 and, with this, http/1.1 for Connect and gRPC-Web clients without HTTP/2.
      allowHTTP1: true,
      minVersion: "TLSv1.2",
      handshakeTimeout: o.handshakeTimeoutMs,
      settings: { maxConcurrentStreams: o.maxConcurrentStreams },
    },
    serve as never,
  );
  server.on("connection", track);
  server.on("session", onSession);
  // Requests that fall back to HTTP/1.1 after the handshake are bound by the same timeouts.
  limitHttp1(server as unknown as http.Server, o);
  // Node keeps no list of idle HTTP/1.1 connections here: they close with destroy() at the end of a drain.
  return { server, closeIdleHttp1: () => undefined };
}
