// What the TypeScript scenario needs from a gRPC library: the calls of both services with the generated
// message types, and the status and ErrorInfo of a failed call. connect.ts and grpc-js.ts provide it.
import { readFileSync } from "node:fs";
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import type {
  AcquireRequestSchema,
  AcquireResponse,
  DescribeRequestSchema,
  DescribeResponse,
  KeepAliveRequestSchema,
  ListTokenKeysResponse,
  KeepAliveResponse,
  ObserveRequestSchema,
  ObserveResponse,
  ReleaseRequestSchema,
  ReleaseResponse,
  RenewRequestSchema,
  RenewResponse,
} from "../../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { GetRequestSchema, GetResponse, PutRequestSchema, PutResponse } from "../../../gen/ts/fencekeeper/v1/store_pb.js";

type Init<Desc extends DescMessage> = MessageInitShape<Desc>;

/** One connection to the server. */
export interface Api {
  acquire(req: Init<typeof AcquireRequestSchema>): Promise<AcquireResponse>;
  renew(req: Init<typeof RenewRequestSchema>): Promise<RenewResponse>;
  release(req: Init<typeof ReleaseRequestSchema>): Promise<ReleaseResponse>;
  describe(req: Init<typeof DescribeRequestSchema>): Promise<DescribeResponse>;
  /** A KeepAlive stream: sends what requests yields, then half-closes; yields every answer. */
  keepAlive(requests: AsyncIterable<Init<typeof KeepAliveRequestSchema>>): AsyncIterable<KeepAliveResponse>;
  /** An Observe stream, cancelled when signal aborts. */
  observe(req: Init<typeof ObserveRequestSchema>, signal: AbortSignal): AsyncIterable<ObserveResponse>;
  listTokenKeys(): Promise<ListTokenKeysResponse>;
  put(req: Init<typeof PutRequestSchema>): Promise<PutResponse>;
  get(req: Init<typeof GetRequestSchema>): Promise<GetResponse>;
  close(): void;
}

/** What a failed call tells: its canonical status code name and the ErrorInfo of its details. */
export interface Failure {
  code: string;
  reason: string;
  domain: string;
}

/** How a client proves who it is; unset fields are not sent. */
export interface Auth {
  /** A JWT, sent as "authorization: Bearer <JWT>" on every call, streams included. */
  bearer?: string;
  /** PEM CA file that the server's certificate must chain to; unset: the system's. */
  ca?: string;
  /** PEM client certificate and key files (mutual TLS). */
  cert?: string;
  key?: string;
}

export interface Library {
  readonly name: string;
  /** Connects to a server given as http://host:port (gRPC over cleartext HTTP/2) or https://host:port (over TLS). */
  connect(server: string, auth?: Auth): Api;
  /** The failure of a call, or undefined when error is not a failed call. */
  failureOf(error: unknown): Failure | undefined;
}

/** A server URL's host:port, and the TLS files of auth read (undefined for http://). */
export function endpoint(server: string, auth: Auth): { address: string; tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer } } {
  const read = (file?: string) => (file ? readFileSync(file) : undefined);
  if (server.startsWith("https://")) {
    return { address: server.slice("https://".length), tls: { ca: read(auth.ca), cert: read(auth.cert), key: read(auth.key) } };
  }
  if (!server.startsWith("http://")) throw new Error(`--server must look like http://host:port or https://host:port, got ${server}`);
  if (auth.ca || auth.cert || auth.key) throw new Error(`--tls-ca, --tls-cert and --tls-key need an https:// server, got ${server}`);
  return { address: server.slice("http://".length) };
}
