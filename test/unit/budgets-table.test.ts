// The ledger's table (server/budgets/table.ts) covers every method of both services and every `bytes` or
// `string` field of their requests, nested ones too, as the generated descriptors have them: a new RPC or
// field cannot land without saying which budget counts it.
import { ScalarType, type DescMessage } from "@bufbuild/protobuf";
import { expect } from "chai";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { Health } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { BUDGETS } from "../../server/budgets/budget.js";
import { checkTable, COSTS, FIELDS } from "../../server/budgets/table.js";

/** Every bytes or string field of a message and of the messages it holds (lists and maps too). */
function byteFields(m: DescMessage, seen = new Set<string>()): string[] {
  if (seen.has(m.typeName)) return [];
  seen.add(m.typeName);
  const out: string[] = [];
  for (const f of m.fields) {
    const nested = f.fieldKind === "message" ? f.message : f.fieldKind === "list" && f.listKind === "message" ? f.message : f.fieldKind === "map" && f.mapKind === "message" ? f.message : undefined;
    if (nested) out.push(...byteFields(nested, seen));
    const scalar = f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar") ? f.scalar : undefined;
    if (scalar === ScalarType.BYTES || scalar === ScalarType.STRING || f.fieldKind === "map") out.push(`${m.typeName}.${f.name}`);
  }
  return out;
}

describe("the ledger's table", () => {
  const services = [LeaseService, FencedStoreService];

  it("has a row for every method of LeaseService and FencedStoreService, and none for a method that is gone", () => {
    const methods = services.flatMap((s) => s.methods.map((m) => `${s.typeName}/${m.name}`)).sort();
    expect(Object.keys(COSTS).sort()).to.deep.equal(methods);
    expect(() => checkTable(services)).not.to.throw();
    expect(() => checkTable([Health])).to.throw(/grpc\.health\.v1\.Health\/Check has no row in server\/budgets\/table\.ts/);
  });

  it("has a row for every bytes and string field of their requests, nested ones too, naming budgets that exist", () => {
    const fields = [...new Set(services.flatMap((s) => s.methods.flatMap((m) => byteFields(m.input))))].sort();
    expect(fields.length).to.be.greaterThan(20);
    expect(fields.filter((f) => !(f in FIELDS)), "fields without a row").to.deep.equal([]);
    expect(Object.keys(FIELDS).filter((f) => !fields.includes(f)), "rows of fields that are gone").to.deep.equal([]);
    for (const [field, row] of Object.entries(FIELDS)) {
      for (const b of row.counts) expect(BUDGETS, field).to.have.property(b);
      expect(row.bound, field).to.not.equal("");
    }
  });
});
