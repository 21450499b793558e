// Authorization: which principal may do what to which resource, as the operator's policy file says
// (docs/authorization.md). Once a policy is set, whatever it does not grant is denied.
//
// The file is read rarely and decided on at every call, so all the work is done when it is parsed: the
// rules are folded, per verb, into who (a name, any authenticated principal, a group, a set of claims)
// may touch which resources, and allows() is a few map lookups and a binary search, with no allocation.
// Reading the file is policy-json.ts's, checking its rules policy-schema.ts's.
import { DomainError } from "../errors/errors.js";
import { JsonReader } from "./policy-json.js";
import { checkPolicy, VERBS, type ClaimWant, type Rule, type Verb } from "./policy-schema.js";
import type { Principal } from "./principal.js";

export { PolicyError } from "./policy-error.js";
export { VERBS, type Verb } from "./policy-schema.js";

/** How a caller is named in messages: their name, or what they are when they have none. */
export function describePrincipal(p: Principal): string {
  return p.via === "anonymous" ? "an unauthenticated caller" : JSON.stringify(p.name);
}

/**
 * Throws PERMISSION_DENIED unless the policy grants `verb` on `resource` to `p`. No policy (undefined):
 * the server runs without authorization, and everything is allowed.
 */
export function authorize(policy: Policy | undefined, p: Principal, verb: Verb, resource: string): void {
  if (policy === undefined || policy.allows(p, verb, resource)) return;
  const why =
    p.via === "anonymous"
      ? `the policy (${policy.source}) grants nothing to unauthenticated callers`
      : `no rule of the policy (${policy.source}) grants ${verb} on it`;
  throw new DomainError(
    "permission_denied",
    `${describePrincipal(p)} may not ${verb} ${JSON.stringify(resource)}: ${why}`,
    "PERMISSION_DENIED",
    { principal: p.name, verb, resource },
  );
}

/** A parsed, checked policy, folded for fast decisions. Immutable: a reload makes a new one. */
export class Policy {
  private constructor(
    readonly source: string,
    readonly ruleCount: number,
    private readonly grants: ReadonlyMap<Verb, VerbGrants>,
  ) {}

  /** Parses and checks a policy file's text; `source` names the file in errors. Throws PolicyError. */
  static parse(text: string, source: string): Policy {
    const doc = new JsonReader(text, source).read();
    const rules = checkPolicy(doc, source);
    return new Policy(source, rules.length, compile(rules));
  }

  /** Whether some rule grants `verb` on `resource` to `p`. Unauthenticated callers are granted nothing. */
  allows(p: Principal, verb: Verb, resource: string): boolean {
    if (p.via === "anonymous") return false;
    const g = this.grants.get(verb);
    if (g === undefined) return false;
    if (g.anyone !== undefined && g.anyone.matches(resource)) return true;
    const named = g.names.get(p.name);
    if (named !== undefined && named.matches(resource)) return true;
    if (g.groups.size > 0) {
      const groups = p.groups;
      for (let i = 0; i < groups.length; i++) {
        const r = g.groups.get(groups[i]);
        if (r !== undefined && r.matches(resource)) return true;
      }
    }
    const claims = g.claims;
    for (let i = 0; i < claims.length; i++) {
      if (claims[i].resources.matches(resource) && claimsMatch(claims[i].want, p.claims)) return true;
    }
    return false;
  }
}

/** Everything one verb is granted on, by whom. */
interface VerbGrants {
  /** To any authenticated principal ("*" in principals). */
  readonly anyone?: Resources;
  readonly names: ReadonlyMap<string, Resources>;
  readonly groups: ReadonlyMap<string, Resources>;
  /** One entry per distinct set of claims. */
  readonly claims: readonly { readonly want: readonly ClaimWant[]; readonly resources: Resources }[];
}

/** Every claim wanted is the principal's own claim, equal to the value or, for a list, holding it. */
function claimsMatch(want: readonly ClaimWant[], have: Readonly<Record<string, unknown>>): boolean {
  for (let i = 0; i < want.length; i++) {
    const { name, value } = want[i];
    // Own claims only: "constructor" must not be found on Object.prototype.
    if (!Object.hasOwn(have, name)) return false;
    const c = have[name];
    if (c !== value && !(Array.isArray(c) && c.includes(value))) return false;
  }
  return true;
}

/** The resources one grantee may touch with one verb: exact names, and prefixes. */
class Resources {
  private constructor(
    private readonly all: boolean,
    private readonly exact: ReadonlySet<string>,
    /** Sorted, and prefix-free: no entry is a prefix of another (the shorter one covers the longer). */
    private readonly prefixes: readonly string[],
  ) {}

  static of(patterns: Iterable<string>): Resources {
    const exact = new Set<string>();
    const prefixes: string[] = [];
    for (const p of patterns) {
      if (p.endsWith("*")) prefixes.push(p.slice(0, -1));
      else exact.add(p);
    }
    if (prefixes.includes("")) return new Resources(true, new Set(), []);
    prefixes.sort();
    // In sorted order, the strings that start with a prefix follow it at once, so comparing each with the
    // last one kept is enough to drop every prefix another one covers.
    const kept: string[] = [];
    for (const p of prefixes) if (kept.length === 0 || !p.startsWith(kept[kept.length - 1])) kept.push(p);
    for (const name of exact) if (covered(kept, name)) exact.delete(name);
    return new Resources(false, exact, kept);
  }

  matches(resource: string): boolean {
    return this.all || this.exact.has(resource) || covered(this.prefixes, resource);
  }
}

/**
 * Whether a sorted, prefix-free list holds a prefix of `s`. Only one can match, and it is the greatest
 * entry not above `s`: an entry between a prefix of `s` and `s` would start with that prefix.
 */
function covered(prefixes: readonly string[], s: string): boolean {
  let lo = 0;
  let hi = prefixes.length - 1;
  let candidate = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (prefixes[mid] <= s) {
      candidate = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return candidate >= 0 && s.startsWith(prefixes[candidate]);
}

function compile(rules: readonly Rule[]): ReadonlyMap<Verb, VerbGrants> {
  const grants = new Map<Verb, VerbGrants>();
  for (const verb of VERBS) {
    let anyone: string[] | undefined;
    const names = new Map<string, string[]>();
    const groups = new Map<string, string[]>();
    const claims = new Map<string, { want: ClaimWant[]; patterns: string[] }>();
    const add = <K>(m: Map<K, string[]>, k: K, patterns: readonly string[]) => {
      const list = m.get(k);
      if (list) list.push(...patterns);
      else m.set(k, [...patterns]);
    };
    for (const rule of rules) {
      if (!rule.verbs.includes(verb)) continue;
      for (const name of rule.principals) {
        if (name === "*") (anyone ??= []).push(...rule.resources);
        else add(names, name, rule.resources);
      }
      for (const group of rule.groups) add(groups, group, rule.resources);
      if (rule.claims.length > 0) {
        const want = [...rule.claims].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        const key = JSON.stringify(want.map((w) => [w.name, w.value]));
        const entry = claims.get(key);
        if (entry) entry.patterns.push(...rule.resources);
        else claims.set(key, { want, patterns: [...rule.resources] });
      }
    }
    const fold = (m: Map<string, string[]>) => new Map([...m].map(([k, patterns]) => [k, Resources.of(patterns)] as const));
    grants.set(verb, {
      anyone: anyone && Resources.of(anyone),
      names: fold(names),
      groups: fold(groups),
      claims: [...claims.values()].map((c) => ({ want: c.want, resources: Resources.of(c.patterns) })),
    });
  }
  return grants;
}
