// The table of every ErrorReason and the type each library raises for it, as docs/client-semantics.md
// writes it down, and the reasons of the generated enum: what each library's reasons test (sdk-suite.ts,
// reasons.test.ts) holds its own table against.
import { readFileSync } from "node:fs";
import { ErrorReason } from "../../gen/ts/fencekeeper/v1/errors_pb.js";
import { ROOT } from "./probe-process.js";

export type Language = "Go" | "Python" | "Java" | "TypeScript";
export type Row = Record<Language, string> & { code: string };

/** What a library's test program prints for `reasons`: its type for each reason of its generated enum ("" or null: none). */
export interface ReasonTypes {
  reasons: Record<string, string | null>;
  not_found_without_reason: string;
}

/** The rows of the table in docs/client-semantics.md, by reason. */
export function documentedReasons(): Record<string, Row> {
  const doc = readFileSync(`${ROOT}docs/client-semantics.md`, "utf8");
  const rows: Record<string, Row> = {};
  for (const m of doc.matchAll(/^\| `([A-Z_]+)` \| ([A-Z_]+) \| `(\w+)` \| `(\w+)` \| `(\w+)` \| `(\w+)` \|$/gm)) {
    rows[m[1]] = { code: m[2], Go: m[3], Python: m[4], Java: m[5], TypeScript: m[6] };
  }
  return rows;
}

/** Every reason of the ErrorReason enum as generated from proto/fencekeeper/v1/errors.proto, but the unspecified one. */
export function generatedReasons(): string[] {
  return Object.keys(ErrorReason)
    .filter((k) => Number.isNaN(Number(k)) && k !== "ERROR_REASON_UNSPECIFIED")
    .sort();
}
