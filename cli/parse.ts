// Parsers of the command's option values; each says what it expected when the value is wrong.
import { InvalidArgumentError } from "commander";
import { parseToken, type Token } from "../client/index.js";

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "10s", "2500ms", "1.5m", "1h"; a bare number is seconds. Returns milliseconds. */
export function duration(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  if (!m) throw new InvalidArgumentError(`expected a duration such as 10s, 2500ms or 1m, got "${raw}"`);
  return Number(m[1]) * UNITS[m[2] ?? "s"];
}

/** "resource:generation:leaseId" or the JSON token that `acquire --json` prints. */
export function token(raw: string): Token {
  try {
    return parseToken(raw);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

export function positiveInteger(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n < 1) throw new InvalidArgumentError(`expected a whole number from 1, got "${raw}"`);
  return n;
}
