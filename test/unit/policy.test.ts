// The authorization policy: who may do what to which resource, denied unless granted; a file that says
// exactly where it is wrong; and reloads that swap the whole policy in, or keep the one in force.
import { expect } from "chai";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rename, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { ConfigError } from "../../server/errors/config-error.js";
import { DomainError } from "../../server/errors/errors.js";
import { PolicyFile } from "../../server/auth/policy-file.js";
import { authorize, Policy, PolicyError, VERBS, type Verb } from "../../server/auth/policy.js";
import { ANONYMOUS, type Principal } from "../../server/auth/principal.js";

const SOURCE = "/etc/fk/policy.json";

const policy = (rules: unknown[]) => Policy.parse(JSON.stringify({ version: 1, rules }), SOURCE);

const mtls = (name: string): Principal => ({ name, via: "mtls", groups: [], claims: {} });
const jwt = (name: string, groups: string[] = [], claims: Record<string, unknown> = {}): Principal => ({ name, via: "jwt", groups, claims });

/** The example of docs/authorization.md. */
const EXAMPLE = {
  version: 1,
  rules: [
    { principals: ["spiffe://example.org/orders-worker", "alice"], verbs: ["acquire", "write", "read", "observe"], resources: ["orders/*"] },
    { groups: ["sre"], verbs: ["admin", "read", "observe"], resources: ["*"] },
    { claims: { team: "payments" }, verbs: ["read"], resources: ["payments/*", "ledger"] },
    { principals: ["*"], verbs: ["observe"], resources: ["public/*"] },
  ],
};

describe("Policy: whom a rule grants to", () => {
  const p = Policy.parse(JSON.stringify(EXAMPLE), SOURCE);

  it("parses the example of the documentation", () => {
    expect(p.ruleCount).to.equal(4);
    expect(p.source).to.equal(SOURCE);
  });

  it("grants a principal named in principals, by its exact name, and no one else", () => {
    expect(p.allows(mtls("spiffe://example.org/orders-worker"), "write", "orders/1")).to.equal(true);
    expect(p.allows(jwt("alice"), "acquire", "orders/1")).to.equal(true);
    expect(p.allows(jwt("bob"), "write", "orders/1")).to.equal(false);
    expect(p.allows(mtls("spiffe://example.org/orders-worker/2"), "write", "orders/1")).to.equal(false);
    expect(p.allows(jwt("Alice"), "acquire", "orders/1")).to.equal(false);
  });

  it("grants a member of a group named in groups, and not a principal named like the group", () => {
    expect(p.allows(jwt("carol", ["dev", "sre"]), "admin", "orders/1")).to.equal(true);
    expect(p.allows(jwt("carol", ["dev"]), "admin", "orders/1")).to.equal(false);
    expect(p.allows(jwt("sre"), "admin", "orders/1")).to.equal(false);
  });

  it("grants a principal whose claims equal every listed claim; a list claim matches when it holds the value", () => {
    expect(p.allows(jwt("dave", [], { team: "payments" }), "read", "ledger")).to.equal(true);
    expect(p.allows(jwt("dave", [], { team: ["search", "payments"] }), "read", "payments/x")).to.equal(true);
    expect(p.allows(jwt("dave", [], { team: "search" }), "read", "ledger")).to.equal(false);
    expect(p.allows(jwt("dave", [], { team: ["search"] }), "read", "ledger")).to.equal(false);
    expect(p.allows(jwt("dave", [], {}), "read", "ledger")).to.equal(false);
    expect(p.allows(jwt("dave", [], { team: "payments" }), "write", "ledger")).to.equal(false);
  });

  it("matches claims by strict equality, for strings, numbers and booleans, and needs all of them", () => {
    const q = policy([{ claims: { level: 3, staff: true, region: "eu" }, verbs: ["read"], resources: ["*"] }]);
    const all = { level: 3, staff: true, region: "eu" };
    expect(q.allows(jwt("e", [], all), "read", "x")).to.equal(true);
    expect(q.allows(jwt("e", [], { ...all, extra: "ignored" }), "read", "x")).to.equal(true);
    expect(q.allows(jwt("e", [], { ...all, level: "3" }), "read", "x")).to.equal(false);
    expect(q.allows(jwt("e", [], { ...all, staff: "true" }), "read", "x")).to.equal(false);
    expect(q.allows(jwt("e", [], { ...all, level: [1, 3] }), "read", "x")).to.equal(true);
    expect(q.allows(jwt("e", [], { level: 3, staff: true }), "read", "x")).to.equal(false);
  });

  it("reads only a principal's own claims, not what every object inherits", () => {
    const q = policy([{ claims: { constructor: "Object" }, verbs: ["read"], resources: ["*"] }]);
    expect(q.allows(jwt("f"), "read", "x")).to.equal(false);
    expect(q.allows(jwt("f", [], { constructor: "Object" }), "read", "x")).to.equal(true);
  });

  it("grants a principal that matches any one of a rule's selectors", () => {
    const q = policy([{ principals: ["alice"], groups: ["sre"], claims: { team: "core" }, verbs: ["read"], resources: ["r"] }]);
    expect(q.allows(jwt("alice"), "read", "r")).to.equal(true);
    expect(q.allows(jwt("bob", ["sre"]), "read", "r")).to.equal(true);
    expect(q.allows(jwt("bob", [], { team: "core" }), "read", "r")).to.equal(true);
    expect(q.allows(jwt("bob", ["dev"], { team: "web" }), "read", "r")).to.equal(false);
  });

  it('grants "*" to every authenticated principal, and never to an unauthenticated caller', () => {
    expect(p.allows(mtls("anyone"), "observe", "public/status")).to.equal(true);
    expect(p.allows(jwt("someone"), "observe", "public/status")).to.equal(true);
    expect(p.allows(ANONYMOUS, "observe", "public/status")).to.equal(false);
  });

  it("grants an unauthenticated caller nothing, whatever groups or claims it carries", () => {
    const q = policy([
      { principals: ["*"], verbs: VERBS, resources: ["*"] },
      { groups: ["g"], claims: { c: 1 }, verbs: VERBS, resources: ["*"] },
    ]);
    const strange: Principal = { name: "", via: "anonymous", groups: ["g"], claims: { c: 1 } };
    for (const verb of VERBS) {
      expect(q.allows(ANONYMOUS, verb, "x")).to.equal(false);
      expect(q.allows(strange, verb, "x")).to.equal(false);
    }
  });
});

describe("Policy: resource patterns", () => {
  const grant = (...resources: string[]) => policy([{ principals: ["u"], verbs: ["read"], resources }]);
  const u = mtls("u");

  it("an exact name matches that name only", () => {
    const p = grant("orders/1");
    expect(p.allows(u, "read", "orders/1")).to.equal(true);
    expect(p.allows(u, "read", "orders/10")).to.equal(false);
    expect(p.allows(u, "read", "orders/")).to.equal(false);
    expect(p.allows(u, "read", "Orders/1")).to.equal(false);
  });

  it('a prefix and "*" matches the prefix followed by anything, including nothing', () => {
    const p = grant("orders/*");
    expect(p.allows(u, "read", "orders/1")).to.equal(true);
    expect(p.allows(u, "read", "orders/eu/7")).to.equal(true);
    expect(p.allows(u, "read", "orders/")).to.equal(true);
    expect(p.allows(u, "read", "orders")).to.equal(false);
    expect(p.allows(u, "read", "ordersX")).to.equal(false);
    expect(p.allows(u, "read", "order")).to.equal(false);
  });

  it('"*" alone matches every resource', () => {
    const p = grant("*");
    for (const r of ["a", "orders/1", "*", "日本語", "😀/x", "z".repeat(256)]) expect(p.allows(u, "read", r), r).to.equal(true);
  });

  it("a prefix is plain text: orders* matches orders, orders2 and orders/1 alike (write orders/* for the hierarchy)", () => {
    const p = grant("orders*");
    expect(p.allows(u, "read", "orders")).to.equal(true);
    expect(p.allows(u, "read", "orders2")).to.equal(true);
    expect(p.allows(u, "read", "orders/1")).to.equal(true);
    expect(p.allows(u, "read", "order")).to.equal(false);
  });

  it("compares names exactly, character by character, without folding case or Unicode forms", () => {
    const p = grant("café/*"); // é as one code point
    expect(p.allows(u, "read", "café/1")).to.equal(true);
    expect(p.allows(u, "read", "cafe\u0301/1")).to.equal(false);
  });

  it("decides as a rule-by-rule reading would, for overlapping names and prefixes of many rules", () => {
    // A slow reading of the rules, against which the folded form is checked.
    const naive = (rules: { principals: string[]; verbs: Verb[]; resources: string[] }[], name: string, verb: Verb, r: string) =>
      rules.some(
        (rule) =>
          (rule.principals.includes(name) || rule.principals.includes("*")) &&
          rule.verbs.includes(verb) &&
          rule.resources.some((pat) => (pat.endsWith("*") ? r.startsWith(pat.slice(0, -1)) : r === pat)),
      );
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = ["a", "b", "/", "é", "😀"];
    const word = () => Array.from({ length: random(5) }, () => alphabet[random(alphabet.length)]).join("");
    const names = ["p0", "p1", "p2"];
    for (let round = 0; round < 50; round++) {
      const rules = Array.from({ length: 1 + random(12) }, () => ({
        principals: [random(8) === 0 ? "*" : names[random(names.length)]],
        verbs: [VERBS[random(VERBS.length)], VERBS[random(VERBS.length)]],
        resources: Array.from({ length: 1 + random(4) }, () => {
          const w = word();
          return random(2) === 0 || w === "" ? `${w}*` : w;
        }),
      }));
      const p = policy(rules);
      for (let k = 0; k < 200; k++) {
        const name = names[random(names.length)];
        const verb = VERBS[random(VERBS.length)];
        const r = word() || "a";
        expect(p.allows(mtls(name), verb, r), JSON.stringify({ rules, name, verb, r })).to.equal(naive(rules, name, verb, r));
      }
    }
  });
});

describe("Policy: verbs, and what is not granted", () => {
  it("has the six verbs", () => {
    expect(VERBS).to.deep.equal(["acquire", "write", "read", "observe", "admin", "preempt"]);
  });

  for (const verb of VERBS) {
    it(`a rule granting ${verb} grants ${verb} and nothing else`, () => {
      const p = policy([{ principals: ["u"], verbs: [verb], resources: ["r"] }]);
      for (const other of VERBS) expect(p.allows(mtls("u"), other, "r"), other).to.equal(other === verb);
    });
  }

  it("denies by default: a policy with no rules denies everything", () => {
    const p = policy([]);
    expect(p.ruleCount).to.equal(0);
    for (const verb of VERBS) expect(p.allows(mtls("u"), verb, "r")).to.equal(false);
  });

  it("denies a verb, a resource or a principal that no rule names", () => {
    const p = policy([{ principals: ["u"], verbs: ["read"], resources: ["r"] }]);
    expect(p.allows(mtls("u"), "read", "r")).to.equal(true);
    expect(p.allows(mtls("u"), "write", "r")).to.equal(false);
    expect(p.allows(mtls("u"), "read", "s")).to.equal(false);
    expect(p.allows(mtls("v"), "read", "r")).to.equal(false);
  });

  it("denies a verb it does not know, should a caller pass one", () => {
    const p = policy([{ principals: ["u"], verbs: VERBS, resources: ["*"] }]);
    expect(p.allows(mtls("u"), "delete" as Verb, "r")).to.equal(false);
  });
});

describe("authorize", () => {
  const p = policy([{ principals: ["alice"], verbs: ["write"], resources: ["orders/*"] }]);

  it("allows everything when no policy is configured", () => {
    expect(() => authorize(undefined, ANONYMOUS, "admin", "anything")).not.to.throw();
    expect(() => authorize(undefined, mtls("bob"), "write", "orders/1")).not.to.throw();
  });

  it("returns when the policy grants the call", () => {
    expect(() => authorize(p, jwt("alice"), "write", "orders/1")).not.to.throw();
  });

  it("refuses with PERMISSION_DENIED, naming the principal, the verb, the resource and the policy", () => {
    let err: unknown;
    try {
      authorize(p, jwt("bob"), "write", "orders/1");
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(DomainError);
    const d = err as DomainError;
    expect(d.kind).to.equal("permission_denied");
    expect(d.reason).to.equal("PERMISSION_DENIED");
    expect(d.metadata).to.deep.equal({ principal: "bob", verb: "write", resource: "orders/1" });
    expect(d.message).to.equal(`"bob" may not write "orders/1": no rule of the policy (${SOURCE}) grants write on it`);
  });

  it("names an unauthenticated caller as such", () => {
    let err: unknown;
    try {
      authorize(p, ANONYMOUS, "read", "orders/1");
    } catch (e) {
      err = e;
    }
    const d = err as DomainError;
    expect(d.kind).to.equal("permission_denied");
    expect(d.metadata).to.deep.equal({ principal: "", verb: "read", resource: "orders/1" });
    expect(d.message).to.equal(`an unauthenticated caller may not read "orders/1": the policy (${SOURCE}) grants nothing to unauthenticated callers`);
  });

  it("quotes names, so that odd characters cannot blur the message", () => {
    expect(() => authorize(p, jwt('ev"e'), "write", "a\nb")).to.throw(DomainError, String.raw`"ev\"e" may not write "a\nb"`);
  });
});

describe("Policy.parse: a bad file says where, what was found and what is allowed", () => {
  /** Parses, expecting a PolicyError at `where` whose message holds every one of `words`. */
  const refused = (text: string, where: string, ...words: string[]) => {
    let err: unknown;
    try {
      Policy.parse(text, SOURCE);
    } catch (e) {
      err = e;
    }
    expect(err, text).to.be.instanceOf(PolicyError);
    const e = err as PolicyError;
    expect(e.source).to.equal(SOURCE);
    expect(e.where).to.equal(where);
    expect(e.message.startsWith(`${SOURCE}: `), e.message).to.equal(true);
    for (const w of words) expect(e.message).to.include(w);
    return e.message;
  };
  const doc = (...rules: unknown[]) => JSON.stringify({ version: 1, rules });
  const rule = (fields: Record<string, unknown>) => ({ principals: ["u"], verbs: ["read"], resources: ["r"], ...fields });

  it("an unknown field, at the top level or in a rule, with the fields there are", () => {
    refused(JSON.stringify({ version: 1, rules: [], rule: [] }), "rule", "rule is not a field of the top level", "version, rules");
    refused(doc(rule({ verb: ["read"] })), "rules[0].verb", `rules[0].verb is not a field of a rule (did you mean "verbs"?)`, "principals, groups, claims, verbs, resources, comment");
    refused(doc(rule({}), rule({ resource: "x" })), "rules[1].resource", `did you mean "resources"?`);
    refused(doc(rule({ expires: 1 })), "rules[0].expires", "rules[0].expires is not a field of a rule; its fields are");
  });

  it("a wrong type", () => {
    refused("[]", "", "the top level must be an object", "got an empty list");
    refused(JSON.stringify({ version: 1, rules: {} }), "rules", "rules must be a list of rules, got an object");
    refused(doc("read"), "rules[0]", `rules[0] must be an object`, `got a string ("read")`);
    refused(doc(rule({ verbs: "read" })), "rules[0].verbs", `rules[0].verbs must be a list of verbs (acquire, write, read, observe, admin, preempt), got a string ("read")`);
    refused(doc(rule({ principals: "alice" })), "rules[0].principals", `rules[0].principals must be a list of principal names`, `got a string ("alice")`);
    refused(doc(rule({ principals: ["alice", 7] })), "rules[0].principals[1]", "rules[0].principals[1] must be a string, got a number (7)");
    refused(doc(rule({ groups: [null] })), "rules[0].groups[0]", "rules[0].groups[0] must be a string, got null");
    refused(doc(rule({ resources: [["r"]] })), "rules[0].resources[0]", "must be a string, got a list");
    refused(doc(rule({ claims: ["team"] })), "rules[0].claims", "rules[0].claims must be an object of claim names and values", "got a list");
    refused(doc(rule({ claims: { team: null } })), "rules[0].claims.team", "rules[0].claims.team must be a string, a number or a boolean, got null");
    refused(doc(rule({ claims: { "team name": ["a"] } })), `rules[0].claims["team name"]`, `rules[0].claims["team name"] must be a string, a number or a boolean, got a list`);
    refused(doc(rule({ claims: { team: { a: 1 } } })), "rules[0].claims.team", "got an object");
    refused(doc(rule({ comment: 1 })), "rules[0].comment", "rules[0].comment must be a string, got a number (1)");
  });

  it("an unknown verb, with the verbs there are", () => {
    refused(doc(rule({ verbs: ["read", "delete"] })), "rules[0].verbs[1]", `rules[0].verbs[1] must be one of acquire, write, read, observe, admin, preempt, got "delete"`);
    refused(doc(rule({ verbs: ["Read"] })), "rules[0].verbs[0]", `got "Read"`);
  });

  it("an empty list, an empty claims object, an empty name", () => {
    refused(doc(rule({ verbs: [] })), "rules[0].verbs", "rules[0].verbs is empty; list at least one of acquire, write, read, observe, admin, preempt");
    refused(doc(rule({ resources: [] })), "rules[0].resources", "rules[0].resources is empty; list at least one resource name or prefix");
    refused(doc(rule({ principals: [] })), "rules[0].principals", "rules[0].principals is empty", "or leave the field out");
    refused(doc(rule({ groups: [] })), "rules[0].groups", "rules[0].groups is empty", "or leave the field out");
    refused(doc(rule({ claims: {} })), "rules[0].claims", "rules[0].claims is empty", "or leave the field out");
    refused(doc(rule({ principals: [""] })), "rules[0].principals[0]", "rules[0].principals[0] is an empty string");
    refused(doc(rule({ resources: ["r", ""] })), "rules[0].resources[1]", "rules[0].resources[1] is an empty string");
    refused(doc(rule({ claims: { "": "x" } })), `rules[0].claims[""]`, "a claim name must not be empty");
  });

  it("a missing field", () => {
    refused(JSON.stringify({ rules: [] }), "version", `version is missing`, `"version": 1`);
    refused(JSON.stringify({ version: 1 }), "rules", "rules is missing");
    refused(doc({ verbs: ["read"], resources: ["r"] }), "rules[0]", "rules[0] says whom it grants to with none of principals, groups, claims");
    refused(doc({ principals: ["u"], resources: ["r"] }), "rules[0].verbs", "rules[0].verbs is missing; give at least one of acquire, write, read, observe, admin, preempt");
    refused(doc({ principals: ["u"], verbs: ["read"] }), "rules[0].resources", "rules[0].resources is missing");
  });

  it('"*" anywhere but at the end of a resource pattern', () => {
    refused(doc(rule({ resources: ["orders/*/items"] })), "rules[0].resources[0]", `got "orders/*/items": "*" may only end a pattern`);
    refused(doc(rule({ resources: ["**"] })), "rules[0].resources[0]", `"*" may only end a pattern`);
    refused(doc(rule({ resources: ["*orders"] })), "rules[0].resources[0]", `"*" may only end a pattern`);
  });

  it("a resource pattern that could match no resource name", () => {
    refused(doc(rule({ resources: ["x".repeat(257)] })), "rules[0].resources[0]", "is 257 bytes", "at most 256 bytes");
    refused(doc(rule({ resources: ["a\u0000b"] })), "rules[0].resources[0]", "control character");
    expect(() => Policy.parse(doc(rule({ resources: ["x".repeat(256), `${"x".repeat(256)}*`] })), SOURCE)).not.to.throw();
  });

  it("a pattern among principal or group names, which are matched exactly", () => {
    refused(doc(rule({ principals: ["spiffe://example.org/*"] })), "rules[0].principals[0]", `"*" alone for any authenticated principal`, "names take no patterns");
    refused(doc(rule({ groups: ["*"] })), "rules[0].groups[0]", `use "principals": ["*"]`);
  });

  it("a version other than 1", () => {
    refused(JSON.stringify({ version: 2, rules: [] }), "version", "version must be 1", "got a number (2)");
    refused(JSON.stringify({ version: "1", rules: [] }), "version", `got a string ("1")`);
  });

  it("invalid JSON, at its line and column", () => {
    refused('{\n  "version": 1,\n  "rules": [\n    { "principals": ["u"] "verbs": ["read"] }\n  ]\n}', "line 4, column 27", "invalid JSON at line 4, column 27", "expected ',' or '}'", `found '"'`);
    refused('{"version": 1, "rules": [],}', "line 1, column 28", "expected a field name in double quotes, found '}'");
    refused('{"version": 1, "rules": [', "line 1, column 26", "found the end of the file");
    refused('{"version": 1, "rules": []} x', "line 1, column 29", "expected the end of the file");
    refused("{'version': 1}", "line 1, column 2", "expected a field name in double quotes");
    refused('{"version": tru}', "line 1, column 13", "expected a value");
    refused('{"version": "a\tb"}', "line 1, column 15", "control character U+0009");
    refused('{"version": "\\x"}', "line 1, column 14", `invalid escape '\\x'`);
    refused('{"version": 01}', "line 1, column 14", "expected ',' or '}'");
    refused("", "line 1, column 1", "the file is empty");
    refused("  \n", "line 2, column 1", "the file is empty");
  });

  it("a field given twice, which JSON.parse would settle silently by keeping the last", () => {
    refused('{"version": 1, "rules": [{"principals": ["u"], "verbs": ["read"], "verbs": ["admin"], "resources": ["r"]}]}', "line 1, column 67", "rules[0].verbs is given twice");
  });

  it("reads what JSON.parse reads: escapes, numbers, a byte order mark, any whitespace", () => {
    const text = '\ufeff{ "version" : 1.0e0,\r\n\t"rules": [ { "principals": ["\\u0061lice"], "claims": {"n": -1.5E+1, "t": true},' +
      ' "verbs": ["read"], "resources": ["caf\\u00e9\\/*", "\\ud83d\\ude00"], "comment": "why: \\"x\\"" } ] }';
    expect(JSON.parse(text.slice(1)).rules[0].claims.n).to.equal(-15);
    const p = Policy.parse(text, SOURCE);
    expect(p.allows(jwt("alice"), "read", "café/1")).to.equal(true);
    expect(p.allows(jwt("alice"), "read", "😀")).to.equal(true);
    expect(p.allows(jwt("x", [], { n: -15, t: true }), "read", "café/")).to.equal(true);
  });

  it("refuses a file nested deeper than any policy, rather than running out of stack", () => {
    refused(`{"version": 1, "rules": [], "x": ${"[".repeat(100_000)}`, "line 1, column 98", "nested more than 64 levels deep");
  });
});

describe("PolicyFile", () => {
  let dir: string;
  let file: string;
  let lines: Record<string, unknown>[];
  let log: pino.Logger;
  let opened: PolicyFile[];

  const grant = (verb: Verb) => JSON.stringify({ version: 1, rules: [{ principals: ["u"], verbs: [verb], resources: ["r"] }] });
  const u = mtls("u");
  const load = async () => {
    const f = await PolicyFile.load(file, log);
    opened.push(f);
    return f;
  };
  /** Replaces the file as editors and `mv` do: a new file renamed over the old one. */
  const replace = async (text: string) => {
    const tmp = join(dir, `.policy.json.${Math.random().toString(36).slice(2)}`);
    await writeFile(tmp, text);
    await rename(tmp, file);
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** Waits up to `ms` for `ok`; returns how long it took, or throws. */
  const within = async (ms: number, ok: () => boolean) => {
    const start = Date.now();
    while (!ok()) {
      if (Date.now() - start > ms) throw new Error(`not within ${ms} ms`);
      await sleep(10);
    }
    return Date.now() - start;
  };
  const logged = (level: number, msg: string) => lines.filter((l) => l.level === level && l.msg === msg);
  const INFO = 30;
  const ERROR = 50;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "fk-policy-"));
    file = join(dir, "policy.json");
    lines = [];
    log = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    opened = [];
    await writeFile(file, grant("read"));
  });

  afterEach(async () => {
    for (const f of opened) f.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("loads a file, and logs it with its rule count and digest", async () => {
    const f = await load();
    expect(f.current().allows(u, "read", "r")).to.equal(true);
    expect(f.current().source).to.equal(file);
    const [line] = logged(INFO, "policy loaded");
    expect(line).to.include({ policy: file, rules: 1 });
    // As `sha256sum` prints it, so that replicas can be compared with the file.
    expect(line.sha256).to.equal(createHash("sha256").update(await readFile(file)).digest("hex"));
  });

  it("refuses to start on a missing file or a bad one, naming --policy and what is wrong", async () => {
    await unlink(file);
    let err: unknown = await PolicyFile.load(file, log).catch((e) => e);
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as Error).message).to.equal(`--policy (FENCEKEEPER_POLICY): cannot read "${file}" (ENOENT)`);

    await writeFile(file, JSON.stringify({ version: 1, rules: [{ principals: ["u"], verbs: ["delete"], resources: ["r"] }] }));
    err = await PolicyFile.load(file, log).catch((e) => e);
    expect(err).to.be.instanceOf(ConfigError);
    expect((err as Error).message).to.equal(
      `--policy (FENCEKEEPER_POLICY): ${file}: rules[0].verbs[0] must be one of acquire, write, read, observe, admin, preempt, got "delete"`,
    );
  });

  it("refuses a file that is not UTF-8, whose names no caller could have", async () => {
    await writeFile(file, Buffer.concat([Buffer.from('{"version": 1, "rules": [{"principals": ["caf'), Buffer.from([0xe9]), Buffer.from('"], "verbs": ["read"], "resources": ["r"]}]}')]));
    const err = await PolicyFile.load(file, log).catch((e) => e);
    expect(err).to.be.instanceOf(ConfigError);
    expect(err.message).to.equal(`--policy (FENCEKEEPER_POLICY): ${file}: the file is not valid UTF-8; save it as UTF-8`);
  });

  it("warns that a policy with no rules denies every call", async () => {
    await writeFile(file, JSON.stringify({ version: 1, rules: [] }));
    await load();
    expect(lines.some((l) => l.level === 40 && l.msg === "the policy has no rules: every call is denied")).to.equal(true);
  });

  it("reload: a good change is swapped in and logged with its rule count", async () => {
    const f = await load();
    const before = f.current();
    await writeFile(file, JSON.stringify({ version: 1, rules: [JSON.parse(grant("write")).rules[0], JSON.parse(grant("admin")).rules[0]] }));
    expect(await f.reload("SIGHUP")).to.equal(true);
    expect(f.current()).not.to.equal(before);
    expect(f.current().allows(u, "write", "r")).to.equal(true);
    expect(f.current().allows(u, "read", "r")).to.equal(false);
    expect(logged(INFO, "policy reloaded")[0]).to.include({ policy: file, reason: "SIGHUP", rules: 2 });
  });

  it("reload: listeners hear of each new policy in force, once it is in force, and not of a bad or unchanged file", async () => {
    const f = await load();
    const heard: boolean[] = [];
    f.onReload((p) => heard.push(p === f.current()));
    await writeFile(file, grant("write"));
    expect(await f.reload("SIGHUP")).to.equal(true);
    expect(await f.reload("SIGHUP")).to.equal(false);
    await writeFile(file, "{");
    expect(await f.reload("SIGHUP")).to.equal(false);
    expect(heard).to.deep.equal([true]);
  });

  it("reload: a bad change keeps the policy in force, and the error says so", async () => {
    const f = await load();
    const before = f.current();
    await writeFile(file, '{"version": 1, "rules": [{"principals": ["u"], "verbs": ["write"], "resources": ["orders/*/x"]}]}');
    expect(await f.reload("SIGHUP")).to.equal(false);
    expect(f.current()).to.equal(before);
    expect(f.current().allows(u, "read", "r")).to.equal(true);
    const [line] = logged(ERROR, "policy not reloaded: the policy in force stays until the file is fixed");
    expect(line).to.include({ policy: file, reason: "SIGHUP" });
    expect(line.err).to.include(`${file}: rules[0].resources[0]`).and.to.include('"*" may only end a pattern');
    expect(line.inForce).to.deep.include({ rules: 1 });

    await writeFile(file, "{");
    expect(await f.reload("SIGHUP")).to.equal(false);
    expect(f.current()).to.equal(before);
    expect(logged(ERROR, "policy not reloaded: the policy in force stays until the file is fixed")[1].err).to.include("invalid JSON at line 1, column 2");
  });

  it("reload: a file gone keeps the policy in force; one unchanged is not parsed again", async () => {
    const f = await load();
    const before = f.current();
    expect(await f.reload("SIGHUP")).to.equal(false);
    expect(f.current()).to.equal(before);
    expect(logged(INFO, "policy unchanged")).to.have.length(1);

    await unlink(file);
    expect(await f.reload("SIGHUP")).to.equal(false);
    expect(f.current()).to.equal(before);
    expect(logged(ERROR, "policy not reloaded: the policy in force stays until the file is fixed")[0].err).to.equal(`cannot read "${file}" (ENOENT)`);
  });

  it("reload: concurrent reloads run in order, and the last file read wins", async () => {
    const f = await load();
    await writeFile(file, grant("write"));
    const a = f.reload("one");
    const b = f.reload("two");
    expect(await a).to.equal(true);
    expect(await b).to.equal(false);
    expect(f.current().allows(u, "write", "r")).to.equal(true);
  });

  it("watch: an atomic rename-replace is seen within a second", async () => {
    const f = await load();
    f.watch();
    await replace(grant("observe"));
    const took = await within(1000, () => f.current().allows(u, "observe", "r"));
    expect(took).to.be.below(1000);
    expect(f.current().allows(u, "read", "r")).to.equal(false);
    expect(logged(INFO, "policy reloaded")[0]).to.include({ reason: "file changed", rules: 1 });
  });

  it("watch: an edit in place is seen too", async () => {
    const f = await load();
    f.watch();
    await writeFile(file, grant("acquire"));
    await within(1000, () => f.current().allows(u, "acquire", "r"));
  });

  it("watch: a bad edit keeps the policy in force and is reported once; fixing it is taken up", async () => {
    const f = await load();
    f.watch();
    await replace('{"version": 2, "rules": []}');
    await within(1000, () => logged(ERROR, "policy not reloaded: the policy in force stays until the file is fixed").length > 0);
    // More events in the directory, the file still bad: nothing new to say.
    await writeFile(join(dir, "unrelated"), "x");
    await sleep(300);
    expect(logged(ERROR, "policy not reloaded: the policy in force stays until the file is fixed")).to.have.length(1);
    expect(f.current().allows(u, "read", "r")).to.equal(true);

    await replace(grant("write"));
    await within(1000, () => f.current().allows(u, "write", "r"));
  });

  it("close() stops watching, and keeps the policy in force", async () => {
    const f = await load();
    f.watch();
    f.close();
    await replace(grant("admin"));
    await sleep(400);
    expect(f.current().allows(u, "read", "r")).to.equal(true);
    expect(f.current().allows(u, "admin", "r")).to.equal(false);
    expect(logged(INFO, "policy reloaded")).to.have.length(0);
  });
});
