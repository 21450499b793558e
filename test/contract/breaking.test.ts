// The contract's breaking-change check means something: CI's own check (scripts/check-contract.sh
// breaking), run on a scratch copy of the contract, fails when a released field is renumbered, removed
// or retyped, or a released method removed, and passes an addition. The baseline is the committed last
// release, contract/released.json (docs/contract.md).
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const LEASE = "proto/fencekeeper/v1/lease.proto";
/** What the check reads, copied as it is in the repository. */
const CONTRACT = ["buf.yaml", "proto", "third_party/proto", "contract/released.json", "scripts/check-contract.sh"];

interface Run {
  code: number;
  output: string;
}

const scratches: string[] = [];

/** A scratch copy of the contract with lease.proto edited; the edit must change something. */
function scratch(edit: (lease: string) => string): string {
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-contract-"));
  scratches.push(dir);
  for (const path of CONTRACT) cpSync(join(ROOT, path), join(dir, path), { recursive: true });
  const before = readFileSync(join(dir, LEASE), "utf8");
  const after = edit(before);
  expect(after, "the edit changes lease.proto").to.not.equal(before);
  writeFileSync(join(dir, LEASE), after);
  return dir;
}

/** CI's breaking check in dir, with the repository's buf. */
function checkBreaking(dir: string): Promise<Run> {
  const env = { ...process.env, PATH: `${join(ROOT, "node_modules/.bin")}${delimiter}${process.env.PATH}` };
  return new Promise((resolve) => {
    execFile("bash", [join(dir, "scripts/check-contract.sh"), "breaking"], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, output: stdout + stderr });
    });
  });
}

/** Replaces exactly one match of pattern. */
function once(text: string, pattern: RegExp, replacement: string): string {
  expect(text.match(new RegExp(pattern, "gm")), `${pattern} in lease.proto`).to.have.length(1);
  return text.replace(pattern, replacement);
}

describe("the contract's breaking-change check against the last release", () => {
  after(() => {
    for (const dir of scratches) rmSync(dir, { recursive: true, force: true });
  });

  it("passes the contract as it is committed", async () => {
    const run = await checkBreaking(ROOT);
    expect(run.code, run.output).to.equal(0);
    expect(run.output).to.include("breaking: ok");
  });

  it("fails a field renumbered, a field removed, a field retyped and a method removed", async () => {
    const [renumbered, removed, retyped, noRenew] = await Promise.all([
      // AcquireRequest's fields (AcquireAllRequest has fields of the same names and numbers).
      checkBreaking(scratch((p) => once(p, /(message AcquireRequest \{[\s\S]*?\n\s+string holder = )3;/, "$130;"))),
      checkBreaking(scratch((p) => once(p, /(message AcquireRequest \{[\s\S]*?\n)\s+bool wait = 4;\n/, "$1"))),
      checkBreaking(scratch((p) => once(p, /(message AcquireRequest \{[\s\S]*?\n\s+)int64( session_id = 6;)/, "$1string$2"))),
      checkBreaking(scratch((p) => once(p, /^\s+rpc Renew\(.*\n/m, ""))),
    ]);
    for (const run of [renumbered, removed, retyped, noRenew]) {
      expect(run.code, run.output).to.not.equal(0);
      expect(run.output).to.include("breaking: FAILED");
    }
    expect(renumbered.output).to.match(/field "3" with name "holder" on message "AcquireRequest" was deleted/);
    expect(removed.output).to.match(/field "4" with name "wait" on message "AcquireRequest" was deleted/);
    expect(retyped.output).to.match(/field "6" with name "session_id" on message "AcquireRequest" changed type from "int64" to "string"/i);
    expect(removed.output).to.not.match(/"holder"/);
    expect(noRenew.output).to.match(/RPC "Renew" on service "LeaseService" was deleted/);
  });

  it("passes additions: a field, a message and a method", async () => {
    const run = await checkBreaking(
      scratch((p) => {
        const withField = once(p, /^(message AcquireRequest \{[^}]*)\}/m, "$1  string scratch_note = 9999;\n}");
        const withMethod = once(withField, /^service LeaseService \{\n/m, "service LeaseService {\n  rpc ScratchNote(ScratchNoteRequest) returns (AcquireResponse);\n");
        return `${withMethod}\nmessage ScratchNoteRequest {\n  string note = 1;\n}\n`;
      }),
    );
    expect(run.code, run.output).to.equal(0);
    expect(run.output).to.include("breaking: ok");
  });
});
