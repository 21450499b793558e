// The connection to etcd, and the one place that turns etcd's failures into the domain's.
import { Etcd3, type IOptions } from "etcd3";
import { noop } from "cockatiel";
import { DomainError, unavailable } from "../domain/errors.js";

export interface EtcdConnectOptions {
  endpoints: string[];
  /** Deadline of every unary etcd call, in ms. Streams (watch, keepalive) have none. */
  callTimeoutMs: number;
  credentials?: IOptions["credentials"];
}

export function connectEtcd(opts: EtcdConnectOptions): Etcd3 {
  return new Etcd3({
    hosts: opts.endpoints,
    credentials: opts.credentials,
    dialTimeout: opts.callTimeoutMs,
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + opts.callTimeoutMs }),
    // No retries and no circuit breaker inside the client: a write retried blindly could apply twice,
    // and a breaker would keep failing calls after etcd is back. Callers see every failure at once.
    faultHandling: { global: noop, host: () => noop },
  });
}

/** Runs one etcd call; any failure that is not already the domain's becomes UNAVAILABLE. */
export async function etcdCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof DomainError) throw err;
    if (String((err as Error)?.message).includes("required revision has been compacted")) {
      throw new DomainError("failed_precondition", `${what}: the snapshot this request reads has been compacted in etcd; start again without a page token`);
    }
    throw unavailable(what, err);
  }
}
