// The connection to etcd.
import { Etcd3, GRPCDeadlineExceededError, GRPCUnavailableError, type IOptions } from "etcd3";
import { circuitBreaker, ConsecutiveBreaker, handleWhen, noop } from "cockatiel";

export interface EtcdConnectOptions {
  endpoints: string[];
  /** Deadline of every unary etcd call, in ms. Streams (watch, keepalive) have none. */
  callTimeoutMs: number;
  /** TLS to etcd (https:// endpoints): a CA to trust instead of the system's, and a client certificate. */
  credentials?: { rootCertificate?: Buffer; privateKey?: Buffer; certChain?: Buffer };
}

/** Failures that say the member did not answer (or could not be reached), not that it refused. */
const noAnswer = (err: Error) => err instanceof GRPCDeadlineExceededError || err instanceof GRPCUnavailableError;

export function connectEtcd(opts: EtcdConnectOptions): Etcd3 {
  return new Etcd3({
    hosts: opts.endpoints,
    // Without a CA of its own, the client trusts the system's (etcd3 passes the fields to grpc-js as is).
    credentials: opts.credentials as IOptions["credentials"],
    // grpc-js backs off up to 120 s between reconnects; a server would then notice for minutes that etcd
    // is back. Keep retrying every few seconds at most.
    grpcOptions: {
      "grpc.initial_reconnect_backoff_ms": 250,
      "grpc.max_reconnect_backoff_ms": 2000,
      // A member cut off by the network drops packets without a word: only a ping that goes unanswered
      // ends a connection whose streams (watches, lease keepalive) would otherwise wait on it for ever.
      // Pings go only while a call is open (etcd refuses them otherwise), and no more often than etcd's
      // --grpc-keepalive-min-time (5 s by default) allows.
      "grpc.keepalive_time_ms": 10_000,
      "grpc.keepalive_timeout_ms": opts.callTimeoutMs,
      // Range pages are bounded by bytes after they are read (store/paging.ts); a page of many large
      // values may come larger than gRPC's default 4 MiB, and then the read is retried smaller.
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    },
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + opts.callTimeoutMs }),
    faultHandling: {
      // No retries: a write retried blindly could apply twice. Callers see every failure at once.
      global: noop,
      // With more than one member, one that let a call go unanswered is left at once (its breaker opens
      // on that one failure): the calls after it go to the other members, each picked at random, without
      // waiting a deadline on it. After one deadline, the next call is let through to it as a probe: if it
      // answers, it is used again; if not, it is left for another deadline. A call never reaches a member
      // whose breaker is open, so nothing is sent twice. With one member there is nowhere else to go: no
      // breaker, so that calls reach etcd as soon as it is back.
      host: () =>
        opts.endpoints.length > 1
          ? circuitBreaker(handleWhen(noAnswer), { halfOpenAfter: opts.callTimeoutMs, breaker: new ConsecutiveBreaker(1) })
          : noop,
    },
  });
}
