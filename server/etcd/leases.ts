// etcd leases: grant, renew, revoke, time to live. Renewals share one LeaseKeepAlive stream to etcd,
// answered in order per lease id. A renewal is sent only when a caller asks for it: nothing here keeps a
// lease alive on its own.
import type { Etcd3, IDuplexStream, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse } from "etcd3";
import { unavailable } from "../domain/errors.js";
import { etcdCall } from "./client.js";

type KeepAliveStream = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

interface PendingRenewal {
  resolve(ttl: number): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class Leases {
  private stream?: Promise<KeepAliveStream>;
  private readonly pending = new Map<string, PendingRenewal[]>();

  constructor(
    private readonly etcd: Etcd3,
    private readonly renewTimeoutMs: number,
  ) {}

  async grant(ttlSeconds: number): Promise<{ id: bigint; ttlSeconds: number }> {
    const res = await etcdCall("lease grant", () => this.etcd.leaseClient.leaseGrant({ TTL: ttlSeconds }));
    return { id: BigInt(res.ID), ttlSeconds: Number(res.TTL) };
  }

  /** Revokes a lease and with it every key attached. False if it was already gone. */
  async revoke(id: bigint): Promise<boolean> {
    try {
      await etcdCall("lease revoke", () => this.etcd.leaseClient.leaseRevoke({ ID: id.toString() }));
      return true;
    } catch (err) {
      if (String((err as Error).message).includes("requested lease not found")) return false;
      throw err;
    }
  }

  /** Seconds left on the lease as etcd reports them; 0 or less when it is gone. */
  async timeToLive(id: bigint): Promise<number> {
    const res = await etcdCall("lease time-to-live", () => this.etcd.leaseClient.leaseTimeToLive({ ID: id.toString() }));
    return Number(res.TTL);
  }

  /**
   * Renews a lease once. Resolves with the TTL etcd reports after the renewal, or 0 if the lease is gone.
   * Rejects with UNAVAILABLE if etcd does not answer within the renewal timeout.
   */
  renew(id: bigint): Promise<number> {
    return etcdCall("lease renew", () => this.renewOnce(id));
  }

  private async renewOnce(id: bigint): Promise<number> {
    const stream = await this.keepAliveStream();
    const key = id.toString();
    return new Promise<number>((resolve, reject) => {
      const entry: PendingRenewal = {
        resolve,
        reject,
        timer: setTimeout(() => {
          // Answers on this stream can no longer be matched with certainty: start a fresh one.
          this.failAll(unavailable("lease keepalive", new Error(`no answer within ${this.renewTimeoutMs} ms`)));
        }, this.renewTimeoutMs),
      };
      const queue = this.pending.get(key) ?? [];
      queue.push(entry);
      this.pending.set(key, queue);
      stream.write({ ID: key });
    });
  }

  close(): void {
    this.failAll(unavailable("lease keepalive", new Error("closing")));
  }

  private keepAliveStream(): Promise<KeepAliveStream> {
    if (!this.stream) {
      const opening = etcdCall("lease keepalive", () => this.etcd.leaseClient.leaseKeepAlive());
      this.stream = opening.then((s) => {
        s.on("data", (res) => this.answer(res));
        s.on("error", (err) => {
          if (this.stream === opening) this.failAll(unavailable("lease keepalive", err));
        });
        s.on("end", () => {
          if (this.stream === opening) this.failAll(unavailable("lease keepalive", new Error("stream ended")));
        });
        return s;
      });
      this.stream.catch(() => {
        if (this.stream === opening) this.stream = undefined;
      });
    }
    return this.stream;
  }

  private answer(res: ILeaseKeepAliveResponse): void {
    const queue = this.pending.get(res.ID);
    const entry = queue?.shift();
    if (!entry) return;
    if (queue!.length === 0) this.pending.delete(res.ID);
    clearTimeout(entry.timer);
    entry.resolve(Number(res.TTL));
  }

  private failAll(err: Error): void {
    const stream = this.stream;
    this.stream = undefined;
    stream?.then((s) => s.cancel(), () => undefined);
    for (const queue of this.pending.values()) {
      for (const entry of queue) {
        clearTimeout(entry.timer);
        entry.reject(err);
      }
    }
    this.pending.clear();
  }
}
