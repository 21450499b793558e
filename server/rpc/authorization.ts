// Authorization, one table for every method: which verb of the policy (docs/authorization.md) a call
// needs, on which resource of its request. The pipeline decides it once per call, before the handler
// runs, and leaves the decision in the call's values (GRANTS), where the handler finds whether the
// caller acts as the resource's admin (server/auth/access.ts). Handlers never ask the policy themselves.
//
// A method missing from the table is a startup error, so that a new method cannot go unauthorized.
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ContextValues } from "@connectrpc/connect";
import { FencedStoreService, type BatchRequest } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { LeaseService, type AcquireAllRequest, type AcquireRequest, type LeaseBatchRequest, type ProclaimRequest, type ReleaseRequest } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { tokenFromProto } from "../wire/token-proto.js";
import { CALLER, GRANTS, VISIBLE, type Access, type Decision } from "../auth/access.js";
import type { Verb } from "../auth/policy.js";
import { checkResource } from "../validation/validate.js";

interface Rule {
  verb: Verb;
  /**
   * The resources the call acts on, each checked as the handler checks it (a name that cannot be a
   * resource is INVALID_ARGUMENT before it is PERMISSION_DENIED). `each`: a refusal is the answer of
   * the write that names it, not of the call (a Batch).
   */
  resources(req: never): string[];
  /** The verb when it depends on the request; unset: verb. */
  verbOf?(req: never): Verb;
  each?: true;
  /** A second verb that grants the call as well (Release: a preemptor gives back what it took). */
  orVerb?: Verb;
  /** The handler binds the call to the caller unless it is the resource's admin: admin is decided too. */
  asAdmin?: true;
  /**
   * The call names no resource but lists some: nothing is refused, and the handler leaves out the
   * resources the caller may not `verb` (the pipeline gives it the filter, VISIBLE).
   */
  lists?: true;
}

/** Methods that name no resource: renewals are checked against what the lease holds (auth/renewal-grants.ts). */
const NONE = undefined;

/** One resource, from the request's `resource` field. */
const resource = (verb: Verb, asAdmin?: true): Rule => ({ verb, asAdmin, resources: (req: { resource: string }) => (checkResource(req.resource), [req.resource]) });

const RULES: Record<string, Rule | typeof NONE> = {
  // Preempting takes the resource from another principal's lease: a verb of its own (admin covers it).
  [`${LeaseService.typeName}/Acquire`]: { ...resource("acquire"), verbOf: (req: AcquireRequest) => (req.preempt ? "preempt" : "acquire") },
  // Releasing is part of acquiring: the same verb, or preempt's (a preemptor gives back what it took;
  // only its own tokens, as for any caller). An admin of the resource may release anyone's lease.
  [`${LeaseService.typeName}/Release`]: {
    verb: "acquire",
    orVerb: "preempt",
    asAdmin: true,
    resources: (req: ReleaseRequest) => {
      const token = tokenFromProto(req.token);
      if (!token) return [];
      checkResource(token.resource, "token.resource");
      return [token.resource];
    },
  },
  // Proclaiming is part of holding: the verb of acquiring, on the token's resource. Only the holder's
  // own principal may (the handler checks the token's), admin or not.
  [`${LeaseService.typeName}/Proclaim`]: {
    verb: "acquire",
    resources: (req: ProclaimRequest) => {
      const token = tokenFromProto(req.token);
      if (!token) return [];
      checkResource(token.resource, "token.resource");
      return [token.resource];
    },
  },
  // Each op on its own resource, as Acquire and Release alone (admin decided first, for the releases);
  // a denied op is refused on its own. An op naming no resource, or an invalid one, is refused on its
  // own by the handler; so is a preempting Acquire, whose verb this table does not ask.
  [`${LeaseService.typeName}/LeaseBatch`]: {
    verb: "acquire",
    each: true,
    asAdmin: true,
    resources: (req: LeaseBatchRequest) =>
      req.ops.flatMap((o) => {
        if (o.op.case === "acquire") return [o.op.value.resource];
        if (o.op.case !== "release") return [];
        const resource = o.op.value.token?.resource;
        return resource !== undefined ? [resource] : [];
      }),
  },
  // All or nothing: every resource must be granted, or the call is refused before anything is acquired.
  [`${LeaseService.typeName}/AcquireAll`]: {
    verb: "acquire",
    resources: (req: AcquireAllRequest) => (req.resources.forEach((r, i) => checkResource(r, `resources[${i}]`)), req.resources),
  },
  [`${LeaseService.typeName}/Describe`]: resource("observe"),
  [`${LeaseService.typeName}/Observe`]: resource("observe"),
  // Lists the resources in use that the caller may observe; the others are left out, not refused.
  [`${LeaseService.typeName}/ListResources`]: { verb: "observe", lists: true, resources: () => [] },
  [`${LeaseService.typeName}/LiftLockDelay`]: resource("admin"),
  [`${LeaseService.typeName}/KeepAlive`]: NONE,
  [`${LeaseService.typeName}/Renew`]: NONE,
  [`${LeaseService.typeName}/OpenSession`]: NONE,
  [`${LeaseService.typeName}/CloseSession`]: NONE,
  [`${LeaseService.typeName}/ListTokenKeys`]: NONE,
  [`${FencedStoreService.typeName}/Put`]: resource("write", true),
  [`${FencedStoreService.typeName}/Delete`]: resource("write", true),
  [`${FencedStoreService.typeName}/Txn`]: resource("write", true),
  // Each write on its own resource; a write that names none, or an invalid one, is refused on its own
  // by the handler.
  [`${FencedStoreService.typeName}/Batch`]: {
    verb: "write",
    each: true,
    asAdmin: true,
    resources: (req: BatchRequest) => req.writes.flatMap((w) => (w.write.case ? [w.write.value.resource] : [])),
  },
  [`${FencedStoreService.typeName}/Get`]: resource("read"),
  [`${FencedStoreService.typeName}/Range`]: resource("read"),
  [`${FencedStoreService.typeName}/GetFence`]: resource("read"),
};

/** Throws, at startup, if a method of the services has no entry in the table. */
export function checkRules(services: DescService[]): void {
  for (const s of services) {
    for (const m of s.methods) {
      const name = `${s.typeName}/${m.name}`;
      if (!(name in RULES)) throw new Error(`${name} has no entry in server/rpc/authorization.ts: say which verb it needs on which resource`);
    }
  }
}

export class Authorization {
  constructor(private readonly access: Access) {}

  /** Whether calls of the method need a decision: a policy is set and the method names a resource. */
  applies(method: DescMethod): boolean {
    return this.access.authorizing && RULES[`${method.parent.typeName}/${method.name}`] !== NONE;
  }

  /**
   * Decides the call's request against the policy, once per resource, and leaves the decisions in its
   * values. Throws the refusal (PERMISSION_DENIED) of a call whose one resource is denied.
   */
  authorize(method: DescMethod, req: unknown, values: ContextValues): void {
    const rule = RULES[`${method.parent.typeName}/${method.name}`];
    if (rule === NONE || !this.access.authorizing) return;
    const caller = values.get(CALLER);
    if (rule.lists) {
      const verb = rule.verb;
      values.set(VISIBLE, (r) => this.access.allows(caller, verb, r));
      return;
    }
    const grants = new Map<string, Decision | Error>();
    values.set(GRANTS, grants);
    const verb = rule.verbOf?.(req as never) ?? rule.verb;
    if (!rule.each) {
      for (const r of rule.resources(req as never)) if (!grants.has(r)) grants.set(r, this.decideEither(rule, caller, verb, r));
      return;
    }
    for (const r of rule.resources(req as never)) {
      if (grants.has(r)) continue;
      try {
        checkResource(r);
      } catch {
        continue; // the handler refuses the write that names it
      }
      try {
        grants.set(r, this.access.decide(caller, verb, r, rule.asAdmin === true));
      } catch (err) {
        grants.set(r, err as Error);
      }
    }
  }

  /** The verb's decision, or, when it is refused and the rule names a second verb, that one's. */
  private decideEither(rule: Rule, caller: Parameters<Access["decide"]>[0], verb: Verb, resource: string): Decision {
    try {
      return this.access.decide(caller, verb, resource, rule.asAdmin === true);
    } catch (err) {
      if (!rule.orVerb) throw err;
      try {
        return this.access.decide(caller, rule.orVerb, resource, rule.asAdmin === true);
      } catch {
        throw err;
      }
    }
  }
}
