// The audit trail's lines for the domain's events told outside any call, and for the preemption's event
// (issue 25, part 1), which the trail hears by its shape once the domain emits it.
import { expect } from "chai";
import { AuditTrail } from "../../server/audit/trail.js";
import type { AuditRecord } from "../../server/audit/record.js";
import type { AuditSink } from "../../server/audit/sink.js";

function trail(): { audit: AuditTrail; lines: AuditRecord[] } {
  const lines: AuditRecord[] = [];
  const sink = { write: (r: AuditRecord) => void lines.push(r) } as unknown as AuditSink;
  return { audit: new AuditTrail(sink, "replica-1"), lines };
}

describe("the audit trail's lines", () => {
  it("preempted: the holder's generation and lease, and who took over under which generation", () => {
    const { audit, lines } = trail();
    audit.heard({ type: "preempted", resource: "jobs/nightly", generation: 41n, leaseId: 7n, byGeneration: 52n, byPrincipal: "orchestrator" });
    expect(lines).to.have.length(1);
    const { time, ...rest } = lines[0];
    expect(Date.parse(time)).to.be.a("number").and.not.NaN;
    expect(rest).to.deep.equal({ kind: "preempted", replica: "replica-1", resource: "jobs/nightly", generation: "41", lease: "7", byPrincipal: "orchestrator", byGeneration: "52" });
  });

  it("outside a call: written at once, without a caller; events that decide nothing make no line", () => {
    const { audit, lines } = trail();
    audit.heard({ type: "granted", resource: "r", generation: 3n, leaseId: 9n, onSession: true, waited: false, mode: "shared" });
    audit.heard({ type: "renewed", leaseId: 9n, ttlSeconds: 10, via: "Renew" });
    audit.heard({ type: "refused", operation: "put", resource: "r", reason: "QUOTA_EXCEEDED" });
    audit.heard({ type: "refused", operation: "put", resource: "r", reason: "LEASE_NOT_HELD" });
    expect(lines.map(({ time: _, ...l }) => l)).to.deep.equal([
      { kind: "granted", replica: "replica-1", resource: "r", generation: "3", lease: "9", session: "9", mode: "shared" },
      { kind: "refused", replica: "replica-1", reason: "LEASE_NOT_HELD", operation: "put", resource: "r" },
    ]);
  });
});
