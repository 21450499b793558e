// Authorization: which principal may do what to which resource, as the operator's policy file says
// (docs/authorization.md). Once a policy is set, whatever it does not grant is denied.
//
// The file is read rarely and decided on at every call, so all the work is done when it is parsed: the
// rules are folded, per verb, into who (a name, any authenticated principal, a group, a set of claims)
// may touch which resources, and allows() is a few map lookups and a binary search, with no allocation.
//
// The JSON is read by a small strict reader of our own rather than JSON.parse: JSON.parse keeps the last
// of two fields with the same name, so `"verbs": ["read"], ..., "verbs": ["admin"]` would grant admin
// without a word, and several of its syntax errors give no position. In a file that grants access,
// both deserve an error that says where.
import { DomainError } from "../domain/errors.js";
import { MAX_RESOURCE_BYTES } from "../domain/limits.js";
import type { Principal } from "./principal.js";

/**
 * What a rule grants, each on the resources it names (docs/authorization.md has the table the handlers keep):
 * - acquire: Acquire the resource (on a lease or a session), Release a lease of it;
 * - write: Put, Delete, Txn in its namespace;
 * - read: Get, Range, GetFence;
 * - observe: Describe, Observe;
 * - admin: act on other principals' leases of it, beside the verb of the act (release them, write under their tokens).
 */
export type Verb = "acquire" | "write" | "read" | "observe" | "admin";

export const VERBS: readonly Verb[] = Object.freeze(["acquire", "write", "read", "observe", "admin"] as const);

/** A policy file that cannot be used. The message names the file and where in it, what was found and what is allowed. */
export class PolicyError extends Error {
  constructor(
    /** The file, as given to Policy.parse. */
    readonly source: string,
    /** Where in the file: a JSON path such as `rules[2].verbs[0]`, or `line 3, column 14` for invalid JSON. */
    readonly where: string,
    message: string,
  ) {
    super(`${source}: ${message}`);
    this.name = "PolicyError";
  }
}

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

// ---- Deciding -------------------------------------------------------------------------------------

type ClaimValue = string | number | boolean;

interface ClaimWant {
  readonly name: string;
  readonly value: ClaimValue;
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

// ---- Checking -------------------------------------------------------------------------------------

interface Rule {
  readonly principals: readonly string[];
  readonly groups: readonly string[];
  readonly claims: readonly ClaimWant[];
  readonly verbs: readonly Verb[];
  readonly resources: readonly string[];
}

type Json = null | boolean | number | string | Json[] | JsonObject;
/** Null prototype: a field named "__proto__" or "constructor" is just a field. */
type JsonObject = { [field: string]: Json };

const TOP_FIELDS = ["version", "rules"];
const RULE_FIELDS = ["principals", "groups", "claims", "verbs", "resources", "comment"];
const VERB_LIST = VERBS.join(", ");
const PRINCIPALS = { listOf: `principal names ("*": any authenticated principal)`, atLeastOne: `principal name ("*": any authenticated principal)`, optional: true };
const GROUPS = { listOf: "group names", atLeastOne: "group name", optional: true };
const VERB_KIND = { listOf: `verbs (${VERB_LIST})`, atLeastOne: `of ${VERB_LIST}`, optional: false };
const RESOURCES = { listOf: `resource names or prefixes (e.g. "orders/*")`, atLeastOne: `resource name or prefix (e.g. "orders/*")`, optional: false };

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What a value is, for "got ..." in messages. */
function found(v: Json | undefined): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return v.length === 0 ? "an empty list" : "a list";
  switch (typeof v) {
    case "string":
      return `a string (${JSON.stringify(v)})`;
    case "number":
      return `a number (${v})`;
    case "boolean":
      return String(v);
    default:
      return "an object";
  }
}

const isObject = (v: Json | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/** `a.b`, or `a["not an identifier"]`. */
function field(path: string, name: string): string {
  const key = /^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
  return path === "" ? key.replace(/^\./, "") : path + key;
}

function checkPolicy(doc: Json, source: string): Rule[] {
  const fail = (where: string, message: string): never => {
    throw new PolicyError(source, where, message);
  };
  const checkFields = (obj: JsonObject, path: string, allowed: string[], what: string) => {
    for (const name of Object.keys(obj)) {
      if (allowed.includes(name)) continue;
      const near = allowed.find((a) => a.toLowerCase() === name.toLowerCase() || a === `${name}s` || `${a}s` === name);
      fail(
        field(path, name),
        `${field(path, name)} is not a field of ${what}` +
          (near ? ` (did you mean "${near}"?)` : "") +
          `; its fields are ${allowed.join(", ")}`,
      );
    }
  };
  /** A non-empty list of non-empty strings, each checked by `each`. `optional`: the field may be left out instead. */
  const stringList = (
    v: Json | undefined,
    path: string,
    kind: { listOf: string; atLeastOne: string; optional: boolean },
    each?: (s: string, at: string) => void,
  ): string[] => {
    if (!Array.isArray(v)) return fail(path, `${path} must be a list of ${kind.listOf}, got ${found(v)}`);
    if (v.length === 0) {
      return fail(path, `${path} is empty; list at least one ${kind.atLeastOne}` + (kind.optional ? ", or leave the field out" : ""));
    }
    return v.map((s, j) => {
      const at = `${path}[${j}]`;
      if (typeof s !== "string") return fail(at, `${at} must be a string, got ${found(s)}`);
      if (s === "") return fail(at, `${at} is an empty string; give a name`);
      each?.(s, at);
      return s;
    });
  };

  if (!isObject(doc)) return fail("", `the top level must be an object like {"version": 1, "rules": [...]}, got ${found(doc)}`);
  checkFields(doc, "", TOP_FIELDS, "the top level");
  if (doc.version === undefined) fail("version", `version is missing; a policy of this format starts with "version": 1`);
  if (doc.version !== 1) fail("version", `version must be 1 (the only format this server reads), got ${found(doc.version)}`);
  if (doc.rules === undefined) fail("rules", `rules is missing; give a list of rules (an empty list denies everything)`);
  if (!Array.isArray(doc.rules)) return fail("rules", `rules must be a list of rules, got ${found(doc.rules)}`);

  return doc.rules.map((r, i): Rule => {
    const path = `rules[${i}]`;
    if (!isObject(r)) return fail(path, `${path} must be an object with verbs, resources and principals, groups or claims; got ${found(r)}`);
    checkFields(r, path, RULE_FIELDS, "a rule");
    if (r.comment !== undefined && typeof r.comment !== "string") {
      fail(`${path}.comment`, `${path}.comment must be a string, got ${found(r.comment)}`);
    }

    const principals =
      r.principals === undefined
        ? []
        : stringList(r.principals, `${path}.principals`, PRINCIPALS, (s, at) => {
            if (s.includes("*") && s !== "*") {
              fail(at, `${at} must be a principal's exact name, or "*" alone for any authenticated principal; got ${JSON.stringify(s)} (names take no patterns)`);
            }
          });
    const groups =
      r.groups === undefined
        ? []
        : stringList(r.groups, `${path}.groups`, GROUPS, (s, at) => {
            if (s.includes("*")) fail(at, `${at} must be a group's exact name, got ${JSON.stringify(s)}; for any authenticated principal, use "principals": ["*"]`);
          });
    const claims: ClaimWant[] = [];
    if (r.claims !== undefined) {
      const at = `${path}.claims`;
      if (!isObject(r.claims)) fail(at, `${at} must be an object of claim names and values, like {"team": "payments"}; got ${found(r.claims)}`);
      const obj = r.claims as JsonObject;
      if (Object.keys(obj).length === 0) fail(at, `${at} is empty; give at least one claim, or leave the field out`);
      for (const [name, value] of Object.entries(obj)) {
        const c = field(at, name);
        if (name === "") fail(c, `${c}: a claim name must not be empty`);
        if (typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) {
          claims.push({ name, value });
        } else {
          fail(c, `${c} must be a string, a number or a boolean, got ${found(value)}`);
        }
      }
    }
    if (principals.length === 0 && groups.length === 0 && claims.length === 0) {
      fail(path, `${path} says whom it grants to with none of principals, groups, claims; give at least one`);
    }

    if (r.verbs === undefined) fail(`${path}.verbs`, `${path}.verbs is missing; give at least one of ${VERB_LIST}`);
    const verbs = stringList(r.verbs, `${path}.verbs`, VERB_KIND, (s, at) => {
      if (!(VERBS as readonly string[]).includes(s)) fail(at, `${at} must be one of ${VERB_LIST}, got ${JSON.stringify(s)}`);
    }) as Verb[];

    if (r.resources === undefined) fail(`${path}.resources`, `${path}.resources is missing; give resource names or prefixes like "orders/*"`);
    const resources = stringList(r.resources, `${path}.resources`, RESOURCES, checkPattern(fail));

    return { principals, groups, claims, verbs, resources };
  });
}

/** A resource pattern: a name, or a prefix and one "*" at its end; either must be able to match a resource name. */
function checkPattern(fail: (where: string, message: string) => never) {
  return (s: string, at: string): void => {
    const star = s.indexOf("*");
    if (star !== -1 && star !== s.length - 1) {
      fail(at, `${at} must be a resource name, or a prefix with one "*" at its end (e.g. "orders/*"), got ${JSON.stringify(s)}: "*" may only end a pattern`);
    }
    const name = star === -1 ? s : s.slice(0, -1);
    const bytes = Buffer.byteLength(name, "utf8");
    if (bytes > MAX_RESOURCE_BYTES) {
      fail(at, `${at} is ${bytes} bytes before any "*", so it can match no resource: resource names are at most ${MAX_RESOURCE_BYTES} bytes`);
    }
    if (CONTROL.test(name) || LONE_SURROGATE.test(name)) {
      fail(at, `${at} holds a control character or invalid UTF-8 (${JSON.stringify(s)}), so it can match no resource name`);
    }
  };
}

// ---- Reading JSON ---------------------------------------------------------------------------------

/** Deep enough for any policy; deeper is refused before the stack runs out. */
const MAX_DEPTH = 64;

/** RFC 8259 JSON, strictly, refusing duplicate fields, with line and column in every error. */
class JsonReader {
  private i = 0;

  constructor(
    private readonly text: string,
    private readonly source: string,
  ) {}

  read(): Json {
    if (this.text.charCodeAt(0) === 0xfeff) this.i = 1; // a byte order mark, as some editors write
    this.space();
    if (this.i === this.text.length) this.fail(`the file is empty; a policy looks like {"version": 1, "rules": [...]}`);
    const v = this.value("", 0);
    this.space();
    if (this.i < this.text.length) this.fail(`expected the end of the file after the top-level value, found ${this.here()}`);
    return v;
  }

  private value(path: string, depth: number): Json {
    if (depth > MAX_DEPTH) this.fail(`nested more than ${MAX_DEPTH} levels deep`);
    const c = this.text[this.i];
    if (c === "{") return this.object(path, depth);
    if (c === "[") return this.array(path, depth);
    if (c === '"') return this.string();
    if (c === "-" || (c >= "0" && c <= "9")) return this.number();
    for (const [word, v] of LITERALS) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length;
        return v;
      }
    }
    return this.fail(`expected a value (an object, a list, a string, a number, true, false or null), found ${this.here()}`);
  }

  private object(path: string, depth: number): JsonObject {
    const obj: JsonObject = Object.create(null);
    this.i++;
    this.space();
    if (this.eat("}")) return obj;
    for (;;) {
      if (this.text[this.i] !== '"') this.fail(`expected a field name in double quotes, found ${this.here()}`);
      const at = this.i;
      const name = this.string();
      if (Object.hasOwn(obj, name)) this.fail(`${field(path, name)} is given twice; give each field once`, at, false);
      this.space();
      if (!this.eat(":")) this.fail(`expected ':' after the field name ${JSON.stringify(name)}, found ${this.here()}`);
      this.space();
      obj[name] = this.value(field(path, name), depth + 1);
      this.space();
      if (this.eat("}")) return obj;
      if (!this.eat(",")) this.fail(`expected ',' or '}' after a field's value, found ${this.here()}`);
      this.space();
    }
  }

  private array(path: string, depth: number): Json[] {
    const list: Json[] = [];
    this.i++;
    this.space();
    if (this.eat("]")) return list;
    for (;;) {
      list.push(this.value(`${path}[${list.length}]`, depth + 1));
      this.space();
      if (this.eat("]")) return list;
      if (!this.eat(",")) this.fail(`expected ',' or ']' after a list item, found ${this.here()}`);
      this.space();
    }
  }

  private string(): string {
    const start = this.i;
    const t = this.text;
    for (let i = start + 1; i < t.length; i++) {
      const c = t.charCodeAt(i);
      if (c === 0x22) {
        this.i = i + 1;
        return JSON.parse(t.slice(start, i + 1)) as string; // checked above: JSON.parse decodes it exactly
      }
      if (c < 0x20) this.fail(`a string holds the control character U+${c.toString(16).padStart(4, "0")}; write it escaped (e.g. \\n)`, i);
      if (c === 0x5c) {
        const e = t[i + 1];
        if (e === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(t.slice(i + 2, i + 6))) this.fail(`expected 4 hex digits after \\u`, i);
          i += 5;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) {
          i += 1;
        } else {
          this.fail(`invalid escape '\\${e ?? ""}' in a string; the escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX`, i);
        }
      }
    }
    return this.fail(`a string is not closed: the file ends before its closing "`, start);
  }

  private number(): number {
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(this.text);
    if (!m) return this.fail(`expected a number, found ${this.here()}`);
    this.i += m[0].length;
    return Number(m[0]);
  }

  private space(): void {
    const t = this.text;
    while (this.i < t.length) {
      const c = t.charCodeAt(this.i);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
      this.i++;
    }
  }

  private eat(c: string): boolean {
    if (this.text[this.i] !== c) return false;
    this.i++;
    return true;
  }

  private here(): string {
    if (this.i >= this.text.length) return "the end of the file";
    const c = this.text.codePointAt(this.i)!;
    return c < 0x20 ? `U+${c.toString(16).padStart(4, "0")}` : `'${String.fromCodePoint(c)}'`;
  }

  /** `invalid`: false for what JSON allows but a policy must not have (a field given twice). */
  private fail(message: string, at = this.i, invalid = true): never {
    let line = 1;
    let lineStart = 0;
    for (let k = 0; k < at && k < this.text.length; k++) {
      if (this.text.charCodeAt(k) === 0x0a) {
        line++;
        lineStart = k + 1;
      }
    }
    const where = `line ${line}, column ${at - lineStart + 1}`;
    throw new PolicyError(this.source, where, invalid ? `invalid JSON at ${where}: ${message}` : `at ${where}: ${message}`);
  }
}

const LITERALS: readonly (readonly [string, Json])[] = [
  ["true", true],
  ["false", false],
  ["null", null],
];

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
