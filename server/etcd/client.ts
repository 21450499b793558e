// The connection to etcd, and the one place that turns etcd's failures into the domain's.
import { Etcd3, type IOptions } from "etcd3";
import { noop } from "cockatiel";
import { DomainError, unavailable } from "../domain/errors.js";

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
    grpcOptions: { "grpc.initial_reconnect_backoff_ms": 250, "grpc.max_reconnect_backoff_ms": 2000 },
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + opts.callTimeoutMs }),
    // No retries and no circuit breaker inside the client: a write retried blindly could apply twice,
    // and a breaker would keep failing calls after etcd is back. Callers see every failure at once.
    faultHandling: { global: noop, host: () => noop },
  });
}

/** Told of every call etcdCall makes: what it was, how long it took, and its error if it failed. */
export type EtcdCallObserver = (what: string, seconds: number, error?: unknown) => void;

let observer: EtcdCallObserver | undefined;

/** Sets the one observer of etcd calls (the metrics); undefined removes it. */
export function observeEtcdCalls(o: EtcdCallObserver | undefined): void {
  observer = o;
}

/** Runs one etcd call; any failure that is not already the domain's becomes UNAVAILABLE. */
export async function etcdCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    const result = await call();
    observer?.(what, (performance.now() - started) / 1000);
    return result;
  } catch (err) {
    observer?.(what, (performance.now() - started) / 1000, err);
    if (err instanceof DomainError) throw err;
    if (String((err as Error)?.message).includes("required revision has been compacted")) {
      throw new DomainError("failed_precondition", `${what}: the snapshot this request reads has been compacted in etcd; start again without a page token`);
    }
    throw unavailable(what, err);
  }
}
