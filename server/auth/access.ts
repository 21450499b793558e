// Who may do what: the caller of a call (put there by authentication), the policy's decision on a verb
// and a resource (made once per call by server/rpc/authorization.ts), and which principal a lease must be
// bound to for the call.
import { createContextKey, type ContextValues } from "@connectrpc/connect";
import type { Socket } from "node:net";
import type { Authenticator } from "./authenticator.js";
import { OpenStreams, type StreamAuthority } from "./open-streams.js";
import { RenewalGrants } from "./renewal-grants.js";
import type { PolicyFile } from "./policy-file.js";
import { authorize, type Verb } from "./policy.js";
import { ANONYMOUS, type Principal } from "./principal.js";

/** The caller of a call, in its context values. */
export const CALLER = createContextKey<Principal>(ANONYMOUS, { description: "the authenticated caller" });
/** The connection a call came on, its Authorization header and the Host it names: what authentication reads. */
export const CREDENTIALS = createContextKey<{ socket: Socket; authorization: string | undefined; host?: string } | undefined>(undefined, {
  description: "the call's credentials",
});

/** The client end of a call's connection: who the caller is when there is no authentication. */
export const PEER = createContextKey<{ address: string; port: number }>({ address: "", port: 0 }, { description: "the client's address and port" });

/** What the policy decided on one resource for a call: granted, and whether as its admin (undefined: not asked). */
export interface Decision {
  readonly admin: boolean | undefined;
}
const ADMIN: Decision = Object.freeze({ admin: true });
const NOT_ADMIN: Decision = Object.freeze({ admin: false });
const GRANTED: Decision = Object.freeze({ admin: undefined });

/** The call's decisions, by resource: granted, or the refusal (a Batch's writes are answered each on its own). */
export const GRANTS = createContextKey<Map<string, Decision | Error> | undefined>(undefined, { description: "the policy's decisions for the call" });

/**
 * For a call that lists resources (ListResources): whether the caller may see one, by the policy's
 * verb for the method. Put by the pipeline (server/rpc/authorization.ts); without a policy, all.
 */
export const VISIBLE = createContextKey<(resource: string) => boolean>(() => true, { description: "which listed resources the caller may see" });

/** What a handler sees of its call's values. */
export interface HasValues {
  readonly values: ContextValues;
}

export class Access {
  /** The streams open now, ended when their credentials expire or the policy stops granting them. */
  readonly streams: OpenStreams;

  constructor(
    readonly authenticator: Authenticator,
    private readonly policy?: PolicyFile,
  ) {
    this.streams = new OpenStreams(policy, authenticator);
  }

  /** Whether the policy still lets a principal renew a lease, given what leases hold. */
  renewalGrants(resourcesOf: (leaseId: bigint) => Promise<string[]>): RenewalGrants {
    return new RenewalGrants(this.policy, resourcesOf);
  }

  /** The authority a stream opens with: its caller, and when the caller's credentials expire. */
  streamAuthority(ctx: HasValues, method: string, grants: StreamAuthority["grants"]): StreamAuthority {
    const principal = ctx.values.get(CALLER);
    const credentials = ctx.values.get(CREDENTIALS);
    const expiresAt = this.enabled && credentials ? this.authenticator.expiresAt(principal, credentials.socket) : undefined;
    return { method, principal, grants, expiresAt, credentials };
  }

  /** Authentication is on: callers are principals, and leases are bound to them. */
  get enabled(): boolean {
    return this.authenticator.enabled;
  }

  caller(ctx: HasValues): Principal {
    return ctx.values.get(CALLER);
  }

  /**
   * Who the caller is for caps: its principal, or without authentication its connection. Not its client
   * address: behind a mesh sidecar, or on one machine, every client shares one, and one client's streams
   * must not lock the others out (docs/authentication.md, "Behind a mesh", says how a mesh passes the
   * caller's identity instead).
   */
  callerKey(ctx: HasValues): string {
    return this.turnKey(ctx);
  }

  /**
   * Who takes turns with whom for etcd's renewals: a principal, or without authentication a connection
   * (clients of one machine share its address, and one of them must not starve the others).
   */
  turnKey(ctx: HasValues): string {
    const peer = ctx.values.get(PEER);
    return this.enabled ? `principal ${ctx.values.get(CALLER).name}` : `connection ${peer.address} ${peer.port}`;
  }

  /**
   * Who is one party when the budgets ask whether the replica is shared (server/budgets/presence.ts): a
   * principal, or without authentication a client address. The unary calls and the streams of one client
   * come on connections of their own (the SDKs open two), and a client is not contended by itself.
   */
  partyKey(ctx: HasValues): string {
    return this.enabled ? `principal ${ctx.values.get(CALLER).name}` : `address ${ctx.values.get(PEER).address}`;
  }

  /** A policy is set: calls are authorized (server/rpc/authorization.ts). */
  get authorizing(): boolean {
    return this.policy !== undefined;
  }

  /**
   * The policy's one decision on the caller doing verb on resource. Throws PERMISSION_DENIED (naming the
   * verb) when neither the verb nor admin (who may do everything on a resource) is granted. asAdmin: the
   * call acts differently for an admin (it may release, or write under, other principals' leases), so
   * admin is asked first, and the verb only for a caller who is not one; otherwise the verb is asked
   * first. Without a policy, everything is allowed.
   */
  decide(caller: Principal, verb: Verb, resource: string, asAdmin: boolean): Decision {
    if (!this.policy) return NOT_ADMIN;
    const policy = this.policy.current();
    if (asAdmin) {
      if (policy.allows(caller, "admin", resource)) return ADMIN;
    } else if (policy.allows(caller, verb, resource) || (verb !== "admin" && policy.allows(caller, "admin", resource))) {
      return GRANTED;
    }
    authorize(policy, caller, verb, resource);
    return NOT_ADMIN;
  }

  /** Whether the policy lets caller do verb on resource (or admin it): no refusal thrown, for a listing. */
  allows(caller: Principal, verb: Verb, resource: string): boolean {
    if (!this.policy) return true;
    const policy = this.policy.current();
    return policy.allows(caller, verb, resource) || policy.allows(caller, "admin", resource);
  }

  /** The principal the caller's leases are bound to; undefined without authentication. */
  owner(ctx: HasValues): string | undefined {
    return this.enabled ? ctx.values.get(CALLER).name : undefined;
  }

  /** As owner(), but undefined for an admin of the resource too: it may release and write under anyone's lease of it. */
  ownerUnlessAdmin(ctx: HasValues, resource: string): string | undefined {
    if (!this.enabled) return undefined;
    const p = ctx.values.get(CALLER);
    const decided = ctx.values.get(GRANTS)?.get(resource);
    const known = decided && !(decided instanceof Error) ? decided.admin : undefined;
    const admin = known ?? this.policy?.current().allows(p, "admin", resource);
    return admin ? undefined : p.name;
  }

  /**
   * What the call's authorization decided on resource: the pipeline decides each resource its method
   * names, once, before the handler runs (server/rpc/authorization.ts). Throws the refusal of a resource
   * it denied: a Batch answers each of its writes on its own. A resource not decided yet is decided now.
   */
  granted(ctx: HasValues, verb: Verb, resource: string): Decision {
    if (!this.policy) return NOT_ADMIN;
    const decided = ctx.values.get(GRANTS)?.get(resource);
    if (decided instanceof Error) throw decided;
    return decided ?? this.decide(ctx.values.get(CALLER), verb, resource, true);
  }
}
