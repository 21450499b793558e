// The fuzzer's model of one server: which tokens it issued and to whom, which leases belong to which
// principal and which are known to be gone, and the greatest generation each resource's store has
// accepted. Every answer is checked against it (is this success one the rules allow?), and at the end
// etcd itself is read and checked against it (is anything there that a refused request wrote?).
//
// The checks are sound under concurrency because they only use what was known BEFORE a request was
// sent: a write whose generation is below a generation that had already been accepted when it was sent
// must be refused, whatever else is in flight; a lease known released before a call was sent cannot be
// renewed by it.
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { PRINCIPALS, type Principal } from "./generators.js";

export interface TokenRec {
  token: FencingToken;
  principal: Principal;
}

/** A write as the server was asked to do it, and what the model knew when it was sent. */
export interface WriteRec {
  serial: number;
  method: string;
  resource: string;
  key: string;
  /** "ok", "refused" (a status other than OK), or "unknown" (cancelled, reset, unanswered). */
  outcome: "ok" | "refused" | "unknown" | "pending";
  /** The status code of its answer, if any. */
  code?: number;
  /** Why the model forbids this write whatever the answer; undefined: allowed if the server takes it. */
  forbidden?: string;
  generation: bigint;
}

export const tokenKey = (t: FencingToken) =>
  `${t.resource}|${t.generation}|${t.leaseId}|${t.principal}|${t.keyId}|${Buffer.from(t.signature).toString("hex")}`;

const KEEP_OLD = 64;
/** The server revokes a released lease after answering, within its etcd timeout (5 s) and a margin. */
const REVOKE_MS = 8000;

export class ServerModel {
  /** Who holds each model resource now, as far as the model knows. */
  readonly current = new Map<string, TokenRec>();
  /** Tokens of generations no longer held (released, or seen superseded), newest last, per principal. */
  readonly old = new Map<Principal, TokenRec[]>(PRINCIPALS.map((p) => [p, []]));
  readonly sessions = new Map<Principal, bigint[]>(PRINCIPALS.map((p) => [p, []]));
  /** Every token this server issued, by its exact content, and to whom. */
  readonly issued = new Map<string, Principal>();
  readonly leaseOwner = new Map<bigint, Principal>();
  readonly sessionIds = new Set<bigint>();
  /**
   * Leases known to be gone, with the time from which no renewal may succeed: at once for a closed
   * session (revoked before the answer), a little later for a released lease (the server revokes it
   * after answering, within its etcd timeout).
   */
  readonly dead = new Map<bigint, number>();
  /** Generations released ("resource|generation"): their owner key is gone before the answer. */
  readonly releasedGenerations = new Set<string>();
  readonly maxIssued = new Map<string, bigint>();
  /** The greatest generation of an accepted write, per resource. */
  readonly fence = new Map<string, bigint>();
  /** Writes by the unique value they put, hex. */
  readonly writes = new Map<string, WriteRec>();

  constructor(readonly auth: boolean) {}

  issue(t: FencingToken, principal: Principal): void {
    this.issued.set(tokenKey(t), principal);
    this.leaseOwner.set(t.leaseId, principal);
    if (t.generation > (this.maxIssued.get(t.resource) ?? 0n)) this.maxIssued.set(t.resource, t.generation);
    const before = this.current.get(t.resource);
    if (before && tokenKey(before.token) !== tokenKey(t)) this.retire(before);
    this.current.set(t.resource, { token: t, principal });
  }

  openSession(id: bigint, principal: Principal): void {
    this.leaseOwner.set(id, principal);
    this.sessionIds.add(id);
    const list = this.sessions.get(principal)!;
    list.push(id);
    if (list.length > KEEP_OLD) list.shift();
  }

  /** The lease of t is gone (released): its token is old now, and its lease dead unless a session carries it. */
  released(t: FencingToken): void {
    this.releasedGenerations.add(`${t.resource}|${t.generation}`);
    if (!this.sessionIds.has(t.leaseId) && !this.dead.has(t.leaseId)) this.dead.set(t.leaseId, Date.now() + REVOKE_MS);
    const cur = this.current.get(t.resource);
    if (cur && cur.token.generation === t.generation) {
      this.current.delete(t.resource);
      this.retire(cur);
    }
  }

  closedSession(id: bigint): void {
    this.dead.set(id, Math.min(this.dead.get(id) ?? Infinity, Date.now()));
    for (const [resource, rec] of this.current) {
      if (rec.token.leaseId === id) {
        this.current.delete(resource);
        this.retire(rec);
      }
    }
  }

  private retire(rec: TokenRec): void {
    const list = this.old.get(rec.principal)!;
    list.push(rec);
    if (list.length > KEEP_OLD) list.shift();
  }

  currentOf(p: Principal): TokenRec[] {
    return [...this.current.values()].filter((r) => r.principal === p);
  }

  /** Why the model forbids a write with this token by this caller, checked when it is sent; undefined: allowed. */
  forbiddenWrite(t: FencingToken, resource: string, mode: number, caller: Principal | undefined): string | undefined {
    if (t.resource !== resource) return `the token is for "${t.resource}", the write for "${resource}"`;
    const owner = this.issued.get(tokenKey(t));
    if (this.auth) {
      if (owner === undefined) return "a token this server never issued (forged or tampered)";
      if (owner !== caller) return `${caller ?? "an anonymous caller"} wrote with ${owner}'s token`;
    } else if (t.signature.length > 0 && owner === undefined) {
      return "a signed token this server never issued (tampered)";
    }
    if (t.generation <= 0n) return `generation ${t.generation}`;
    const fence = this.fence.get(resource) ?? 0n;
    if (t.generation < fence) return `generation ${t.generation} below the fence ${fence} accepted before it was sent`;
    if (mode === 2 && this.releasedGenerations.has(`${t.resource}|${t.generation}`)) return `LIVE write under generation ${t.generation}, released before it was sent`;
    return undefined;
  }

  /** Why the model forbids this caller to renew, release or close lease id; undefined: allowed. */
  forbiddenLeaseUse(id: bigint, caller: Principal | undefined): string | undefined {
    if ((this.dead.get(id) ?? Infinity) < Date.now()) return `lease ${id} was released or closed before the call was sent`;
    if (!this.auth) return undefined;
    const owner = this.leaseOwner.get(id);
    if (owner === undefined) return `lease ${id} was never handed to anyone`;
    if (owner !== caller) return `${caller ?? "an anonymous caller"} used ${owner}'s lease ${id}`;
    return undefined;
  }

  /** Why the model forbids this caller to release t; undefined: allowed. */
  forbiddenRelease(t: FencingToken, caller: Principal | undefined): string | undefined {
    if (this.releasedGenerations.has(`${t.resource}|${t.generation}`)) return `generation ${t.generation} of "${t.resource}" was released before`;
    const owner = this.issued.get(tokenKey(t));
    if (this.auth && owner !== caller) return owner === undefined ? "a token this server never issued" : `${caller ?? "an anonymous caller"} released ${owner}'s token`;
    if (!this.auth && t.signature.length > 0 && owner === undefined) return "a signed token this server never issued (tampered)";
    return undefined;
  }

  accepted(resource: string, generation: bigint): void {
    if (generation > (this.fence.get(resource) ?? 0n)) this.fence.set(resource, generation);
  }
}
