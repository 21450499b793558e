// One cleartext port for every protocol: HTTP/2 with prior knowledge (gRPC, and Connect or gRPC-Web
// over h2c) and HTTP/1.1 (Connect and gRPC-Web from browsers and curl). The first bytes of a connection
// tell which: an HTTP/2 connection opens with the preface "PRI * HTTP/2.0".
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\n");

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

export interface Transport {
  readonly address: AddressInfo;
  /** Stops accepting connections; existing HTTP/2 sessions get GOAWAY and finish their streams. */
  stopAccepting(): void;
  /** Closes every connection now. */
  destroy(): void;
  /** Resolves once every connection has closed. */
  closed(): Promise<void>;
}

export async function listen(host: string, port: number, handler: Handler): Promise<Transport> {
  const h2 = http2.createServer({}, handler as never);
  const h1 = http.createServer(handler as never);
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.Http2Session>();
  h2.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.once("error", () => socket.destroy());
    let head = Buffer.alloc(0);
    const sniff = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      if (n < H2_PREFACE.length && head.subarray(0, n).equals(H2_PREFACE.subarray(0, n))) return; // need more
      socket.removeListener("data", sniff);
      socket.pause();
      socket.unshift(head);
      // Each server takes the socket over with the bytes already read put back in front.
      if (head.subarray(0, n).equals(H2_PREFACE.subarray(0, n))) {
        h2.emit("connection", socket);
      } else {
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", sniff);
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const closed = new Promise<void>((resolve) => server.once("close", () => resolve()));

  return {
    address: server.address() as AddressInfo,
    stopAccepting() {
      server.close();
      for (const s of sessions) s.close();
      h1.closeIdleConnections();
    },
    destroy() {
      for (const s of sockets) s.destroy();
    },
    closed: () => closed,
  };
}
