// The shutdown of a replica that other replicas outlive: say NOT_SERVING, take no new calls, send the
// streams elsewhere, let unary calls finish within the grace period, then close what is left.
import type { Logger } from "pino";
import type { HealthStatus } from "../health/status.js";
import type { Transport } from "../rpc/transport.js";
import type { InFlightCalls } from "../rpc/in-flight.js";

export interface DrainParts {
  health: HealthStatus;
  transport: Transport;
  calls: InFlightCalls;
  /** How long unary calls in flight may take to finish. */
  graceMs: number;
  /** How long abandoned calls get to answer UNAVAILABLE and clean up (a waiter leaving the line). */
  settleMs: number;
  log: Logger;
}

/** Connections still open once every call has ended are idle or stuck: they get this long to close. */
const CLOSE_MS = 1000;

export async function drain(p: DrainParts): Promise<void> {
  p.health.setDraining();
  p.transport.stopAccepting();
  // Health Watch streams send NOT_SERVING, queued just above, before they end with the others.
  await new Promise((resolve) => setImmediate(resolve));
  p.calls.endStreams();
  if (!(await p.calls.unaryDone(p.graceMs))) {
    p.log.warn({ calls: p.calls.unaryCount, graceMs: p.graceMs }, "grace period over: abandoning the calls still in flight");
    p.calls.abandonUnary();
    await p.calls.unaryDone(p.settleMs);
  }
  await Promise.race([p.transport.closed(), new Promise((resolve) => setTimeout(resolve, CLOSE_MS))]);
  p.transport.destroy();
}
