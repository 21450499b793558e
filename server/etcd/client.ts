// The connection to etcd.
import { Etcd3, type IOptions } from "etcd3";
import { noop } from "cockatiel";

export interface EtcdConnectOptions {
  endpoints: string[];
  /** Deadline of every unary etcd call, in ms. Streams (watch, keepalive) have none. */
  callTimeoutMs: number;
  /** TLS to etcd (https:// endpoints): a CA to trust instead of the system's, and a client certificate. */
  credentials?: { rootCertificate?: Buffer; privateKey?: Buffer; certChain?: Buffer };
}

export function connectEtcd(opts: EtcdConnectOptions): Etcd3 {
  return new Etcd3({
    hosts: opts.endpoints,
    // Without a CA of its own, the client trusts the system's (etcd3 passes the fields to grpc-js as is).
    credentials: opts.credentials as IOptions["credentials"],
    dialTimeout: opts.callTimeoutMs,
    // grpc-js backs off up to 120 s between reconnects; a server would then notice for minutes that etcd
    // is back. Keep retrying every few seconds at most.
    grpcOptions: {
      "grpc.initial_reconnect_backoff_ms": 250,
      "grpc.max_reconnect_backoff_ms": 2000,
      // Range pages are bounded by bytes after they are read (store/paging.ts); a page of many large
      // values may come larger than gRPC's default 4 MiB, and then the read is retried smaller.
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    },
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + opts.callTimeoutMs }),
    // No retries and no circuit breaker inside the client: a write retried blindly could apply twice,
    // and a breaker would keep failing calls after etcd is back. Callers see every failure at once.
    faultHandling: { global: noop, host: () => noop },
  });
}
