// The connection to etcd.
import { Etcd3, type IOptions } from "etcd3";
import { handleWhen, type IPolicy, noop, retry } from "cockatiel";
import { memberBreaker, noAnswer } from "./member-breaker.js";

export interface EtcdConnectOptions {
  endpoints: string[];
  /** Deadline of every unary etcd call, in ms. Streams (watch, keepalive) have none. */
  callTimeoutMs: number;
  /** TLS to etcd (https:// endpoints): a CA to trust instead of the system's, and a client certificate. */
  credentials?: { rootCertificate?: Buffer; privateKey?: Buffer; certChain?: Buffer };
}

/**
 * For reads alone (they change nothing, so sending one twice is harmless): a read that a member let go
 * unanswered is sent once more at once. Its member's breaker is open by then, so the second goes to
 * another member. Never for a write, whose outcome is unknown once it went unanswered; and not with one
 * member, where it would only wait a second deadline on the same one.
 */
const readRetry = retry(handleWhen(noAnswer), { maxAttempts: 1 });
const readPolicies = new WeakMap<Etcd3, IPolicy>();

/** How a read through this client is run (readRetry, or as it is for a client of one member). */
export function readPolicy(etcd: Etcd3): IPolicy {
  return readPolicies.get(etcd) ?? noop;
}

export function connectEtcd(opts: EtcdConnectOptions): Etcd3 {
  const credentials = opts.credentials as IOptions["credentials"];
  const grpcOptions: IOptions["grpcOptions"] = {
    // grpc-js backs off up to 120 s between reconnects; a server would then notice for minutes that etcd
    // is back. Keep retrying every few seconds at most.
    "grpc.initial_reconnect_backoff_ms": 250,
    "grpc.max_reconnect_backoff_ms": 2000,
    // A member cut off by the network drops packets without a word: only a ping that goes unanswered
    // ends a connection whose streams (watches, lease keepalive) would otherwise wait on it for ever.
    // Pings go only while a call is open (etcd refuses them otherwise), and no more often than etcd's
    // --grpc-keepalive-min-time (5 s by default) allows.
    "grpc.keepalive_time_ms": 10_000,
    "grpc.keepalive_timeout_ms": opts.callTimeoutMs,
    // A member left after a call went unanswered has its channels closed (etcd3 does that); with
    // grpc-js's global pool the new ones would share the old, hanging TCP connection, which after a
    // partition heals answers only when the kernel's retransmission backs off to it (seconds later).
    // Channels of their own connect afresh.
    "grpc.use_local_subchannel_pool": 1,
    // Range pages are bounded by bytes after they are read (store/paging.ts); a page of many large
    // values may come larger than gRPC's default 4 MiB, and then the read is retried smaller.
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
  };
  const etcd = new Etcd3({
    hosts: opts.endpoints,
    // Without a CA of its own, the client trusts the system's (etcd3 passes the fields to grpc-js as is).
    credentials,
    grpcOptions,
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + opts.callTimeoutMs }),
    faultHandling: {
      // No retries here: a write retried blindly could apply twice. Callers see every failure at once
      // (reads alone are sent again, by readPolicy).
      global: noop,
      // With more than one member, one that let a call go unanswered is left at once, and used again
      // once a probe finds it answers (member-breaker.ts): the calls meanwhile go to the other members,
      // each picked at random, without waiting a deadline on it. With one member there is nowhere else to
      // go: no breaker, so that calls reach etcd as soon as it is back.
      host: (host) => (opts.endpoints.length > 1 ? memberBreaker(host, { callTimeoutMs: opts.callTimeoutMs, credentials, grpcOptions }) : noop),
    },
  });
  if (opts.endpoints.length > 1) readPolicies.set(etcd, readRetry);
  return etcd;
}
