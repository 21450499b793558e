// What LeaseService calls tell about leases, as this replica sees them.
//
// Leases held: the leases this replica granted (Acquire with a lease of its own, and OpenSession: a
// session is one lease, however many acquisitions it carries) that it has not seen end. A lease ends here
// when it is released (a session: closed) through this replica, when a renewal through this replica finds it gone, or when
// the TTL it last reported (at the grant or a renewal through this replica) runs out. Renewals sent to
// another replica are not seen, so a lease renewed only elsewhere drops out of this count early; with
// each client on one replica (gRPC keeps a client on one HTTP/2 connection) the sum over replicas is
// the number of leases held. Nothing is read from etcd for this.
import { Code } from "@connectrpc/connect";
import { Counter, Gauge, type Registry } from "prom-client";
import {
  LeaseService,
  type AcquireRequest,
  type AcquireResponse,
  type CloseSessionRequest,
  type OpenSessionResponse,
  type KeepAliveResponse,
  type ReleaseRequest,
  type RenewRequest,
  type RenewResponse,
} from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { codeName, type CallObserver } from "../observability/call-observer.js";

class HeldLeases {
  private readonly expiry = new Map<bigint, { at: number; session: boolean }>();

  granted(id: bigint, ttlSeconds: number, session = false): void {
    this.expiry.set(id, { at: Date.now() + ttlSeconds * 1000, session });
  }

  renewed(id: bigint, ttlSeconds: number): void {
    const e = this.expiry.get(id);
    if (e) e.at = Date.now() + ttlSeconds * 1000;
  }

  /** The lease is gone; an acquisition on a session (released) leaves its session held. */
  gone(id: bigint, onlyIfOwn = false): void {
    if (onlyIfOwn && this.expiry.get(id)?.session) return;
    this.expiry.delete(id);
  }

  count(): number {
    const now = Date.now();
    for (const [id, e] of this.expiry) if (e.at <= now) this.expiry.delete(id);
    return this.expiry.size;
  }
}

export function leaseMetrics(registry: Registry): CallObserver {
  const held = new HeldLeases();
  new Gauge({
    name: "fencekeeper_leases_held",
    help: "Leases granted by this replica and not yet seen released or expired.",
    registers: [registry],
    collect() {
      this.set(held.count());
    },
  });
  const waiting = new Gauge({
    name: "fencekeeper_acquire_waiting",
    help: "Acquire calls with wait set in flight on this replica: callers waiting in line, or just granted.",
    registers: [registry],
  });
  const renewals = new Counter({
    name: "fencekeeper_lease_renewals_total",
    help: "Renewals answered, by method (Renew, KeepAlive) and result (OK, NotFound: the lease is gone, Unavailable: etcd did not answer).",
    labelNames: ["grpc_method", "result"],
    registers: [registry],
  });
  const renewal = (method: string, leaseId: bigint, ttl: { seconds: bigint } | undefined, result: string) => {
    renewals.inc({ grpc_method: method, result });
    if (ttl) held.renewed(leaseId, Number(ttl.seconds));
    if (result === "NotFound") held.gone(leaseId);
  };

  const { acquire, keepAlive, renew, release, openSession, closeSession } = LeaseService.method;
  return ({ method, request }) => {
    switch (method) {
      case acquire: {
        const wait = (request as AcquireRequest | undefined)?.wait ?? false;
        if (wait) waiting.inc();
        return {
          end(error, response) {
            if (wait) waiting.dec();
            // An acquisition on a session has no TTL of its own: its lease is the session, counted at OpenSession.
            const r = response as AcquireResponse | undefined;
            if (!error && r?.token && r.ttl) held.granted(r.token.leaseId, Number(r.ttl.seconds));
          },
        };
      }
      case renew: {
        const { leaseId } = request as RenewRequest;
        return { end: (error, response) => renewal("Renew", leaseId, (response as RenewResponse | undefined)?.ttl, codeName(error)) };
      }
      case keepAlive:
        return {
          message(m) {
            const { leaseId, ttl, error, renewals: many } = m as KeepAliveResponse;
            if (many.length === 0) return renewal("KeepAlive", leaseId, ttl, error ? Code[error.code] : "OK");
            for (const r of many) renewal("KeepAlive", r.leaseId, r.ttl, r.error ? Code[r.error.code] : "OK");
          },
          end() {},
        };
      case release: {
        const leaseId = (request as ReleaseRequest).token?.leaseId;
        return {
          end(error) {
            if (leaseId !== undefined && (!error || codeName(error) === "NotFound")) held.gone(leaseId, true);
          },
        };
      }
      case openSession:
        return {
          end(error, response) {
            const r = response as OpenSessionResponse | undefined;
            if (!error && r) held.granted(r.sessionId, Number(r.ttl?.seconds ?? 0n), true);
          },
        };
      case closeSession: {
        const { sessionId } = request as CloseSessionRequest;
        return {
          end(error) {
            if (!error || codeName(error) === "NotFound") held.gone(sessionId);
          },
        };
      }
      default:
        return undefined;
    }
  };
}
