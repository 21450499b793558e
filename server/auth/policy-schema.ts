// The schema of a policy file (docs/authorization.md): what a rule may say, checked field by field, with
// an error that names where in the file the first problem is, what was found and what is allowed.
import { MAX_RESOURCE_BYTES } from "../validation/limits.js";
import { CONTROL_CHARACTER, LONE_SURROGATE } from "../validation/validate.js";
import { PolicyError } from "./policy-error.js";
import { field, type Json, type JsonObject } from "./policy-json.js";

/**
 * What a rule grants, each on the resources it names (docs/authorization.md has the table the handlers keep):
 * - acquire: Acquire the resource (on a lease or a session), Release a lease of it;
 * - write: Put, Delete, Txn in its namespace;
 * - read: Get, Range, GetFence;
 * - observe: Describe, Observe;
 * - admin: act on other principals' leases of it, beside the verb of the act (release them, write under their tokens);
 * - preempt: Acquire it with preempt set, taking it from its holder (docs/preemption.md); admin covers it.
 */
export type Verb = "acquire" | "write" | "read" | "observe" | "admin" | "preempt";

export const VERBS: readonly Verb[] = Object.freeze(["acquire", "write", "read", "observe", "admin", "preempt"] as const);

export type ClaimValue = string | number | boolean;

export interface ClaimWant {
  readonly name: string;
  readonly value: ClaimValue;
}

/** One rule of a policy file, checked. */
export interface Rule {
  readonly principals: readonly string[];
  readonly groups: readonly string[];
  readonly claims: readonly ClaimWant[];
  readonly verbs: readonly Verb[];
  readonly resources: readonly string[];
}

const TOP_FIELDS = ["version", "rules"];
const RULE_FIELDS = ["principals", "groups", "claims", "verbs", "resources", "comment"];
const VERB_LIST = VERBS.join(", ");
const PRINCIPALS = { listOf: `principal names ("*": any authenticated principal)`, atLeastOne: `principal name ("*": any authenticated principal)`, optional: true };
const GROUPS = { listOf: "group names", atLeastOne: "group name", optional: true };
const VERB_KIND = { listOf: `verbs (${VERB_LIST})`, atLeastOne: `of ${VERB_LIST}`, optional: false };
const RESOURCES = { listOf: `resource names or prefixes (e.g. "orders/*")`, atLeastOne: `resource name or prefix (e.g. "orders/*")`, optional: false };

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

/** The rules of a policy file, read (policy-json.ts); throws PolicyError naming where the first problem is. */
export function checkPolicy(doc: Json, source: string): Rule[] {
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
    if (CONTROL_CHARACTER.test(name) || LONE_SURROGATE.test(name)) {
      fail(at, `${at} holds a control character or invalid UTF-8 (${JSON.stringify(s)}), so it can match no resource name`);
    }
  };
}
