// The audit sink (server/audit/sink.ts) on its own: a full queue drops and counts, a file that cannot be
// written drops and counts and is tried again later, and close() writes what is queued.
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { AuditSink, escapeControls } from "../../server/audit/sink.js";
import type { AuditRecord } from "../../server/audit/record.js";

const line = (n: number): AuditRecord => ({ time: new Date(0).toISOString(), kind: "granted", replica: "r", resource: `r${n}`, generation: String(n) });

describe("the audit sink", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "fencekeeper-audit-sink-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps at most maxQueued lines waiting behind the one write in progress; the rest are dropped and counted; close() writes the queue", async () => {
    const file = join(dir, "queue.jsonl");
    const counts = { written: 0, dropped: 0 };
    const sink = new AuditSink({ target: file, maxQueued: 2, onWritten: (n) => (counts.written += n), onDropped: (n) => (counts.dropped += n) });
    // Synchronously: the first line is in the write, two wait, two find the queue full.
    for (let i = 1; i <= 5; i++) sink.write(line(i));
    await sink.close(5000);
    expect(counts).to.deep.equal({ written: 3, dropped: 2 });
    const lines = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as AuditRecord);
    expect(lines.map((l) => l.resource)).to.deep.equal(["r1", "r2", "r3"]);
    sink.write(line(6));
    expect(counts.dropped, "a line after close is dropped").to.equal(3);
  });

  it("a file that cannot be written (/dev/full): every line dropped and counted, the error told once per failure, writes tried again after retryMs", async () => {
    const counts = { written: 0, dropped: 0, errors: 0 };
    const sink = new AuditSink({
      target: "/dev/full",
      retryMs: 50,
      onWritten: (n) => (counts.written += n),
      onDropped: (n) => (counts.dropped += n),
      onError: () => void counts.errors++,
    });
    for (let i = 0; i < 100; i++) sink.write(line(i));
    for (let waited = 0; counts.errors === 0 && waited < 5000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    expect(counts.written).to.equal(0);
    expect(counts.dropped).to.equal(100);
    expect(counts.errors).to.equal(1);
    await new Promise((r) => setTimeout(r, 80));
    sink.write(line(100));
    await sink.close(1000);
    expect(counts.errors, "tried again after the pause, and failed again").to.equal(2);
    expect(counts.dropped).to.equal(101);
  });

  it("a file removed while the server runs is created again before the next batch; every line counted once", async () => {
    const file = join(dir, "removed.jsonl");
    const counts = { written: 0, dropped: 0 };
    const sink = new AuditSink({ target: file, onWritten: (n) => (counts.written += n), onDropped: (n) => (counts.dropped += n) });
    sink.write(line(1));
    sink.write(line(2));
    for (let waited = 0; counts.written < 2 && waited < 5000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    const before = readFileSync(file, "utf8");
    unlinkSync(file);
    sink.write(line(3));
    await sink.close(5000);
    expect(counts).to.deep.equal({ written: 3, dropped: 0 });
    expect(before.trim().split("\n").map((l) => JSON.parse(l).resource)).to.deep.equal(["r1", "r2"]);
    expect(readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l).resource)).to.deep.equal(["r3"]);
  });

  it("a file that ends in half a line (torn before this server opened it) gets a line break first: no line is glued to it", async () => {
    const file = join(dir, "torn.jsonl");
    writeFileSync(file, '{"time":"x","kind":"gran');
    const sink = new AuditSink({ target: file });
    sink.write(line(1));
    await sink.close(5000);
    const lines = readFileSync(file, "utf8").split("\n");
    expect(lines[0]).to.equal('{"time":"x","kind":"gran');
    expect(JSON.parse(lines[1]).resource).to.equal("r1");
    expect(lines[2]).to.equal("");
  });

  it("escapes the line and paragraph separators, bidi and other format controls, and C1 controls, as JSON reads them back", () => {
    const name = "a\u2028b\u2029c\u202ed\u2066e\u200ff\u0085g\u007fh\ufeffi\u{e0001}j";
    const json = escapeControls(JSON.stringify({ resource: name }));
    expect(json).to.match(/^[\x20-\x7e]*$/);
    expect(json).to.include("\\u2028").and.include("\\u202e").and.include("\\udb40");
    expect(JSON.parse(json).resource).to.equal(name);
    // What is printable stays as it is.
    expect(escapeControls(JSON.stringify({ resource: "名前/é" }))).to.equal(JSON.stringify({ resource: "名前/é" }));
  });
});
