// A run kept on disk, to check again later (a changed checker, a closer look at a violation): the
// client history, one Op per line, and beside it (`<file>.etcd.jsonl`) the resources, the schedule of
// faults and etcd's revision on its first line, then etcd's final contents and its history, one key-value
// or event per line (values in base64). Line by line, so that a long run's million operations and
// millions of events are written and read without one string of them all (V8's strings end at 512 MB).
import { closeSync, openSync, readSync, writeSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import type { IKeyValue } from "etcd3";
import type { EtcdEvent, EtcdTruth } from "./etcd-history.js";
import { parseOp, type Op } from "./history.js";
import type { ScheduledFault } from "./nemesis.js";

const kvOut = (kv: IKeyValue) => ({ ...kv, key: kv.key.toString("base64"), value: kv.value.toString("base64") });
const kvIn = (kv: Record<string, string>): IKeyValue => ({ ...kv, key: Buffer.from(kv.key, "base64"), value: Buffer.from(kv.value, "base64") }) as unknown as IKeyValue;

/** Writes lines through one descriptor, a few thousand at a time (no string of them all). */
export function writeLines(file: string, lines: Iterable<string>): void {
  const fd = openSync(file, "w");
  try {
    let chunk: string[] = [];
    const flush = () => {
      if (chunk.length > 0) writeSync(fd, chunk.join("\n") + "\n");
      chunk = [];
    };
    for (const l of lines) {
      chunk.push(l);
      if (chunk.length >= 4_096) flush();
    }
    flush();
  } finally {
    closeSync(fd);
  }
}

/** The lines of a file, read in pieces (a file larger than one string can hold). */
function* readLines(file: string): Generator<string> {
  const fd = openSync(file, "r");
  const buf = Buffer.alloc(1 << 22);
  const utf8 = new StringDecoder("utf8");
  let rest = "";
  try {
    for (;;) {
      const n = readSync(fd, buf);
      if (n === 0) break;
      const parts = (rest + utf8.write(buf.subarray(0, n))).split("\n");
      rest = parts.pop()!;
      yield* parts;
    }
    if (rest) yield rest;
  } finally {
    closeSync(fd);
  }
}

export function saveRun(file: string, ops: Op[], truth: EtcdTruth, resources: string[], schedule: ScheduledFault[] = []): void {
  writeLines(file, (function* () {
    for (const op of ops) yield JSON.stringify(op);
  })());
  saveEtcd(file, truth, resources, schedule);
}

/** etcd's side of a run whose client history is in file already (written as the run went, profile.ts). */
export function saveEtcd(file: string, truth: EtcdTruth, resources: string[], schedule: ScheduledFault[]): void {
  writeLines(`${file}.etcd.jsonl`, (function* () {
    yield JSON.stringify({ resources, schedule, revision: String(truth.revision), final: truth.final.length });
    for (const kv of truth.final) yield JSON.stringify(kvOut(kv));
    for (const e of truth.events) yield JSON.stringify({ type: e.type, rev: String(e.rev), kv: kvOut(e.kv) });
  })());
}

export function loadRun(file: string): { ops: Op[]; truth: EtcdTruth; resources: string[]; schedule: ScheduledFault[] } {
  const ops: Op[] = [];
  for (const l of readLines(file)) {
    const op = parseOp(l);
    if (op) ops.push(op);
  }
  const lines = readLines(`${file}.etcd.jsonl`);
  const head = JSON.parse(lines.next().value as string) as { resources: string[]; schedule: ScheduledFault[]; revision: string; final: number };
  const final: IKeyValue[] = [];
  const events: EtcdEvent[] = [];
  for (const l of lines) {
    if (!l) continue;
    if (final.length < head.final) final.push(kvIn(JSON.parse(l)));
    else {
      const e = JSON.parse(l) as { type: "put" | "delete"; rev: string; kv: Record<string, string> };
      events.push({ type: e.type, rev: BigInt(e.rev), kv: kvIn(e.kv) });
    }
  }
  return { ops, resources: head.resources, schedule: head.schedule, truth: { events, final, revision: BigInt(head.revision) } };
}
