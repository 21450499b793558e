// Whether the server takes calls, per service name, as the health service reports it.
//
// The server as a whole ("") and each API service are SERVING while etcd answers, has room for writes
// (no NOSPACE alarm: etcd refuses every write then) and the server is not draining, NOT_SERVING otherwise: these are the names for readiness and load balancing. "liveness"
// stays SERVING for as long as the process answers, so that a liveness probe does not restart every
// replica while etcd is away (a restart would not bring etcd back).
import { HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";

export { ServingStatus };

/** The health service name that only says the process is alive. */
export const LIVENESS = "liveness";

export class HealthStatus {
  private etcdReachable = false;
  private etcdNoSpace = false;
  private draining = false;
  private readonly listeners = new Set<() => void>();

  /** services: the fully qualified names of the API services, reported besides "" and "liveness". */
  constructor(private readonly services: readonly string[]) {}

  /** The status of one name; undefined for a name the server does not know. */
  of(service: string): ServingStatus | undefined {
    if (service === LIVENESS) return ServingStatus.SERVING;
    if (service !== "" && !this.services.includes(service)) return undefined;
    return this.etcdReachable && !this.etcdNoSpace && !this.draining ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  }

  /** Every name with its status. */
  all(): Map<string, ServingStatus> {
    return new Map(["", ...this.services, LIVENESS].map((name) => [name, this.of(name)!]));
  }

  get serving(): boolean {
    return this.of("") === ServingStatus.SERVING;
  }

  get etcdUp(): boolean {
    return this.etcdReachable;
  }

  setEtcdReachable(reachable: boolean): void {
    if (reachable === this.etcdReachable) return;
    this.etcdReachable = reachable;
    this.changed();
  }

  get etcdOutOfSpace(): boolean {
    return this.etcdNoSpace;
  }

  /** etcd's NOSPACE alarm is raised: it refuses writes until an operator frees space and disarms it. */
  setEtcdOutOfSpace(noSpace: boolean): void {
    if (noSpace === this.etcdNoSpace) return;
    this.etcdNoSpace = noSpace;
    this.changed();
  }

  /** For good: a draining server does not serve again. */
  setDraining(): void {
    if (this.draining) return;
    this.draining = true;
    this.changed();
  }

  /** Calls listener after every change; returns the function that stops it. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}
