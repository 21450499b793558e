// The policy file's JSON, read by a small strict reader of our own rather than JSON.parse: JSON.parse
// keeps the last of two fields with the same name, so `"verbs": ["read"], ..., "verbs": ["admin"]` would
// grant admin without a word, and several of its syntax errors give no position. In a file that grants
// access, both deserve an error that says where.
import { PolicyError } from "./policy-error.js";

export type Json = null | boolean | number | string | Json[] | JsonObject;
/** Null prototype: a field named "__proto__" or "constructor" is just a field. */
export type JsonObject = { [field: string]: Json };

/** `a.b`, or `a["not an identifier"]`. */
export function field(path: string, name: string): string {
  const key = /^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
  return path === "" ? key.replace(/^\./, "") : path + key;
}

/** Deep enough for any policy; deeper is refused before the stack runs out. */
const MAX_DEPTH = 64;

/** RFC 8259 JSON, strictly, refusing duplicate fields, with line and column in every error. */
export class JsonReader {
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
