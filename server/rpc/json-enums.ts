// Protobuf JSON names enum values by name. A name the schema does not know must be refused, naming the
// field and the values it takes: read leniently, a misspelled FENCE_MODE_LIVE would become unset, and
// unset means FENCE_MODE_ORDER, a weaker rule than the one asked for.
import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { invalid } from "../errors/errors.js";

/** Throws INVALID_ARGUMENT if an enum field of the JSON request holds a name or number its enum does not have. */
export function checkJsonEnums(desc: DescMessage, json: unknown, path = ""): void {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return;
  for (const field of desc.fields) {
    const value = (json as Record<string, unknown>)[field.jsonName] ?? (json as Record<string, unknown>)[field.name];
    if (value === undefined || value === null) continue;
    const where = path + field.name;
    const values = field.fieldKind === "list" ? (Array.isArray(value) ? value : []) : [value];
    for (const v of values) {
      if (field.fieldKind === "enum" || (field.fieldKind === "list" && field.listKind === "enum")) checkEnum(field, where, v);
      else if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
        checkJsonEnums(field.message!, v, `${where}.`);
      }
    }
  }
}

function checkEnum(field: DescField, where: string, v: unknown): void {
  const e = field.enum!;
  if (typeof v === "string" && e.values.some((x) => x.name === v)) return;
  if (typeof v === "number" && Number.isInteger(v) && e.values.some((x) => x.number === v)) return;
  const allowed = e.values.map((x) => `${x.name} (${x.number})`).join(", ");
  throw invalid(`${where} is ${JSON.stringify(v)}, which is not a ${e.name}; use one of ${allowed}`);
}
