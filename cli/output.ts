// What the fencekeeper command prints: lines for people, or with --json one JSON object per line (JSON
// Lines; 64-bit numbers as decimal strings). Errors are one line on stderr, never a stack trace. Lines
// for people show a name's bidi controls and line separators as escapes (visible-text.ts).
import { Code } from "@connectrpc/connect";
import { CommanderError } from "commander";
import { FencekeeperError, LeaseLostError, tokenToJson } from "../client/index.js";
import { visibleText } from "./visible-text.js";

export class Output {
  constructor(readonly json: boolean) {}

  /** One result: `data` as a JSON line, or `human` as text (names with their hidden characters escaped). */
  result(data: Record<string, unknown>, human: () => string): void {
    process.stdout.write(this.json ? toJsonLine(data) : visibleText(human()) + "\n");
  }

  /** Raw bytes to stdout, for people reading a value. */
  raw(bytes: Uint8Array): void {
    process.stdout.write(bytes);
    if (process.stdout.isTTY) process.stdout.write("\n");
  }

  error(err: unknown): void {
    process.stderr.write(`fencekeeper: ${visibleText(describeError(err))}\n`);
    if (this.json) process.stdout.write(toJsonLine({ error: errorJson(err) }));
  }
}

export function toJsonLine(data: unknown): string {
  return JSON.stringify(data, (_, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n";
}

/** FAILED_PRECONDITION, as gRPC names codes. */
export const codeName = (code: Code): string => Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();

export function describeError(err: unknown): string {
  if (err instanceof LeaseLostError) return err.message;
  if (err instanceof FencekeeperError) return `${err.message} (${[codeName(err.code), err.reason].filter(Boolean).join(" ")})`;
  if (err instanceof Error) return err.message.replace(/^error: /, "");
  return String(err);
}

function errorJson(err: unknown): Record<string, unknown> {
  if (err instanceof LeaseLostError) {
    return { code: "LEASE_LOST", why: err.why, message: err.message, token: tokenToJson(err.token), validUntil: err.validUntil };
  }
  if (err instanceof FencekeeperError) return { code: codeName(err.code), reason: err.reason, message: err.message, metadata: err.metadata };
  const usage = err instanceof RangeError || err instanceof CommanderError;
  return { code: usage ? "USAGE" : "UNKNOWN", message: describeError(err) };
}

/** Text when the bytes are UTF-8; otherwise "base64:" and their base64. */
export function showValue(v: Uint8Array): string {
  const text = utf8(v);
  return text ?? `base64:${Buffer.from(v).toString("base64")}`;
}

/** A value for a JSON line: { value } when UTF-8, else { valueBase64 }. */
export function valueJson(v: Uint8Array): { value: string } | { valueBase64: string } {
  const text = utf8(v);
  return text !== undefined ? { value: text } : { valueBase64: Buffer.from(v).toString("base64") };
}

function utf8(v: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(v);
  } catch {
    return undefined;
  }
}
