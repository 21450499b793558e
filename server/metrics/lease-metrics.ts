// Leases as the domain reports them on this replica (server/events/events.ts): held, waiting, renewed.
//
// Leases held: the leases this replica granted to holders (an acquisition's lease of its own, and a
// session: one lease, however many acquisitions it carries) that it has not seen end. One ends here
// when it is released (a session: closed) through this replica, when a renewal through this replica
// finds it gone, or when the TTL it last learnt (at the grant or a renewal through this replica) runs
// out. Each is kept with its expiry only: who holds what is etcd's to say. Renewals sent to another
// replica are not seen, so a lease renewed only elsewhere drops out of this count early; with each
// client on one replica (gRPC keeps a client on one HTTP/2 connection) the sum over replicas is the
// number of leases held.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { codeNameOf } from "../rpc/status.js";
import type { DomainEvents } from "../events/events.js";

/** The leases granted here and not seen end, each with when its last-known TTL runs out (ms since the epoch). */
class HeldLeases {
  private readonly until = new Map<bigint, number>();

  hold(id: bigint, ttlSeconds: number): void {
    this.until.set(id, Date.now() + ttlSeconds * 1000);
  }

  /** A renewal of a lease granted elsewhere is not counted: it is that replica's. */
  renewed(id: bigint, ttlSeconds: number): void {
    if (this.until.has(id)) this.hold(id, ttlSeconds);
  }

  end(id: bigint): void {
    this.until.delete(id);
  }

  count(): number {
    const now = Date.now();
    for (const [id, at] of this.until) if (at <= now) this.until.delete(id);
    return this.until.size;
  }
}

export function leaseMetrics(registry: Registry, events: DomainEvents): void {
  const held = new HeldLeases();
  // Sessions are among the leases held (one lease each) and also counted on their own.
  const sessions = new HeldLeases();
  new Gauge({
    name: "fencekeeper_leases_held",
    help: "Leases granted by this replica and not yet seen released or expired (a session counts as one).",
    registers: [registry],
    collect() {
      this.set(held.count());
    },
  });
  new Gauge({
    name: "fencekeeper_sessions_held",
    help: "Sessions opened through this replica and not yet seen closed or expired.",
    registers: [registry],
    collect() {
      this.set(sessions.count());
    },
  });
  const waited = new Histogram({
    name: "fencekeeper_acquire_wait_seconds",
    help: "Time an Acquire with wait spent in line, by result (turn: its turn came; left: deadline, cancel or shutdown first).",
    labelNames: ["result"],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const waiting = new Gauge({
    name: "fencekeeper_acquire_waiting",
    help: "Acquire calls with wait set that wait in line on this replica.",
    registers: [registry],
  });
  const renewals = new Counter({
    name: "fencekeeper_lease_renewals_total",
    help: "Renewals answered, by method (Renew, KeepAlive) and result (OK, NotFound: the lease is gone, Unavailable: etcd did not answer).",
    labelNames: ["grpc_method", "result"],
    registers: [registry],
  });

  const preemptions = new Counter({
    name: "fencekeeper_preemptions_total",
    help: "Holdings ended by a preemption through this replica (an Acquire with preempt set; shared holders count one each).",
    registers: [registry],
  });

  // Looked up once: a KeepAlive stream's renewals come thousands a second.
  const renewedOk = { Renew: renewals.labels({ grpc_method: "Renew", result: "OK" }), KeepAlive: renewals.labels({ grpc_method: "KeepAlive", result: "OK" }) };

  events.on((e) => {
    switch (e.type) {
      case "granted":
        // An acquisition on a session has no lease of its own: its lease is the session, counted when opened.
        if (!e.onSession) held.hold(e.leaseId, e.ttlSeconds ?? 0);
        return;
      case "session opened":
        sessions.hold(e.sessionId, e.ttlSeconds);
        return held.hold(e.sessionId, e.ttlSeconds);
      case "released":
        if (!e.onSession) held.end(e.leaseId);
        return;
      case "preempted":
        // The old lease is renewed no more: it counts as held until it is seen gone, as an expiring one.
        return preemptions.inc();
      case "session closed":
        sessions.end(e.sessionId);
        return held.end(e.sessionId);
      case "lease gone":
        sessions.end(e.leaseId);
        return held.end(e.leaseId);
      case "renewed":
        renewedOk[e.via].inc();
        sessions.renewed(e.leaseId, e.ttlSeconds);
        return held.renewed(e.leaseId, e.ttlSeconds);
      case "not renewed":
        return renewals.inc({ grpc_method: e.via, result: codeNameOf(e.kind) });
      case "waiting":
        return waiting.inc();
      case "done waiting":
        waited.observe({ result: e.turn ? "turn" : "left" }, e.seconds);
        return waiting.dec();
    }
  });
}
