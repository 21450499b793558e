// A run kept on disk, to check again later (a changed checker, a closer look at a violation): the
// client history, one Op per line, and beside it etcd's history and final contents (values in base64)
// and the schedule of faults.
import { readFileSync, writeFileSync } from "node:fs";
import type { IKeyValue } from "etcd3";
import type { EtcdEvent, EtcdTruth } from "./etcd-history.js";
import { parseOp, type Op } from "./history.js";
import type { ScheduledFault } from "./nemesis.js";

const kvOut = (kv: IKeyValue) => ({ ...kv, key: kv.key.toString("base64"), value: kv.value.toString("base64") });
const kvIn = (kv: Record<string, string>): IKeyValue => ({ ...kv, key: Buffer.from(kv.key, "base64"), value: Buffer.from(kv.value, "base64") }) as unknown as IKeyValue;

export function saveRun(file: string, ops: Op[], truth: EtcdTruth, resources: string[], schedule: ScheduledFault[] = []): void {
  writeFileSync(file, ops.map((op) => JSON.stringify(op)).join("\n") + "\n");
  const etcd = {
    resources,
    schedule,
    revision: String(truth.revision),
    final: truth.final.map(kvOut),
    events: truth.events.map((e) => ({ type: e.type, rev: String(e.rev), kv: kvOut(e.kv) })),
  };
  writeFileSync(`${file}.etcd.json`, JSON.stringify(etcd));
}

export function loadRun(file: string): { ops: Op[]; truth: EtcdTruth; resources: string[]; schedule: ScheduledFault[] } {
  const ops = readFileSync(file, "utf8").split("\n").map(parseOp).filter((op): op is Op => op !== undefined);
  const etcd = JSON.parse(readFileSync(`${file}.etcd.json`, "utf8")) as {
    resources: string[];
    schedule?: ScheduledFault[];
    revision: string;
    final: Record<string, string>[];
    events: { type: "put" | "delete"; rev: string; kv: Record<string, string> }[];
  };
  const events: EtcdEvent[] = etcd.events.map((e) => ({ type: e.type, rev: BigInt(e.rev), kv: kvIn(e.kv) }));
  return { ops, resources: etcd.resources, schedule: etcd.schedule ?? [], truth: { events, final: etcd.final.map(kvIn), revision: BigInt(etcd.revision) } };
}
