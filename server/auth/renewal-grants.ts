// Whether the policy still lets a principal keep a lease alive. Renewing names no resource, so it needs
// no verb of its own; but renewing is holding on, and holding is part of acquiring: once a policy reload
// takes `acquire` (and `admin`, and `preempt`, which acquires too) on a resource away from a principal, its leases that hold that resource
// are refused renewal (PERMISSION_DENIED, naming the resource), on Renew and on every KeepAlive stream,
// open or new. They then end at their TTL, as any lease not renewed (or sooner, released by an admin).
//
// What a lease holds is asked of etcd (the keys attached to it), once per lease and policy: a reload
// forgets every decision. Before the first reload nothing is asked: each lease was acquired under the
// policy in force, so renewals cost nothing extra on a server whose policy has not changed.
import { DomainError } from "../errors/errors.js";
import type { PolicyFile } from "./policy-file.js";
import { describePrincipal } from "./policy.js";
import type { Principal } from "./principal.js";

/** Most decisions kept; beyond it the oldest is forgotten (and asked again if renewed again). */
const MAX_DECISIONS = 100_000;
/**
 * Most questions to etcd at once: after a reload, a KeepAlive message of 10,000 ids must not become
 * 10,000 concurrent etcd calls (each lease's is a LeaseTimeToLive, which a transaction cannot batch).
 */
const MAX_ASKING = 64;

export class RenewalGrants {
  /** Per lease, for the policy in force: undefined once allowed, or the refusal, or the question under way. */
  private readonly decided = new Map<bigint, { principal: string; refusal?: DomainError; pending?: Promise<void> }>();
  private reloaded = 0;
  private asking = 0;
  /** Questions waiting for a turn, from turnsHead on. */
  private turns: (() => void)[] = [];
  private turnsHead = 0;

  constructor(
    private readonly policy: PolicyFile | undefined,
    /** The resources a lease holds now. */
    private readonly resourcesOf: (leaseId: bigint) => Promise<string[]>,
  ) {
    policy?.onReload(() => {
      this.reloaded++;
      this.decided.clear();
    });
  }

  /** Resolves if `p` may renew the lease (bound to it already) under the policy in force; undefined: at once. */
  check(p: Principal, leaseId: bigint): Promise<void> | undefined {
    if (!this.policy || this.reloaded === 0) return undefined;
    const d = this.decided.get(leaseId);
    if (d && d.principal === p.name) {
      if (d.refusal) return Promise.reject(d.refusal);
      return d.pending;
    }
    const generation = this.reloaded;
    const pending = this.decide(p, leaseId).then(
      (refusal) => {
        if (generation === this.reloaded) this.remember(leaseId, { principal: p.name, refusal });
        if (refusal) throw refusal;
      },
      (err) => {
        // etcd could not say: ask again at the next renewal.
        if (generation === this.reloaded) this.decided.delete(leaseId);
        throw err;
      },
    );
    this.remember(leaseId, { principal: p.name, pending });
    return pending;
  }

  private async decide(p: Principal, leaseId: bigint): Promise<DomainError | undefined> {
    const resources = await this.ask(leaseId);
    const policy = this.policy!.current();
    const resource = resources.find((r) => !policy.allows(p, "acquire", r) && !policy.allows(p, "admin", r) && !policy.allows(p, "preempt", r));
    if (resource === undefined) return undefined;
    return new DomainError(
      "permission_denied",
      `${describePrincipal(p)} may no longer renew lease ${leaseId}: it holds ${JSON.stringify(resource)}, and the policy (${policy.source}) no longer grants acquire on it; release it`,
      "PERMISSION_DENIED",
      { principal: p.name, verb: "acquire", resource, lease_id: String(leaseId) },
    );
  }

  private async ask(leaseId: bigint): Promise<string[]> {
    if (this.asking >= MAX_ASKING) await new Promise<void>((r) => this.turns.push(r));
    else this.asking++;
    try {
      return await this.resourcesOf(leaseId);
    } finally {
      // The turn passes on as it is (asking stays counted), or is given back.
      const next = this.turns[this.turnsHead];
      if (next) {
        this.turns[this.turnsHead++] = undefined!;
        if (this.turnsHead === this.turns.length) [this.turns, this.turnsHead] = [[], 0];
        next();
      } else this.asking--;
    }
  }

  private remember(leaseId: bigint, d: { principal: string; refusal?: DomainError; pending?: Promise<void> }): void {
    this.decided.delete(leaseId);
    if (this.decided.size >= MAX_DECISIONS) this.decided.delete(this.decided.keys().next().value!);
    this.decided.set(leaseId, d);
  }
}
