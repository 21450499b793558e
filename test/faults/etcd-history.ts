// The truth of a run, read back from etcd after it: every change under the servers' prefix, revision by
// revision from the first (a watch from revision 1 replays etcd's whole history; nothing compacts it
// during a run: the servers run with --compaction-interval 0, and the cluster runs without auto-compaction), and the
// final contents. A sentinel key written last tells the watch where the history ends.
// The one exception is the etcd-quota nemesis (quota.ts), which must compact to free space: it first
// reads the history up to the compaction into the run's HistoryLog, and the last read goes on from there.
import { Etcd3, type IKeyValue } from "etcd3";

/**
 * A watch from an old revision answers in batches that can pass grpc-js's default 4 MiB for one message
 * (a long run's batch was 5.4 MB): no limit for the clients that read history.
 */
export const HISTORY_GRPC_OPTIONS = { "grpc.max_receive_message_length": -1 };

export interface EtcdEvent {
  type: "put" | "delete";
  /** The revision of the change (a delete's kv carries it as its mod revision). */
  rev: bigint;
  kv: IKeyValue;
}

export interface EtcdTruth {
  events: EtcdEvent[];
  /** Every key under the prefix at the end, with its value and revisions. */
  final: IKeyValue[];
  revision: bigint;
}

/** The history read so far (before a compaction), and the revision the next read starts from. */
export class HistoryLog {
  events: EtcdEvent[] = [];
  from = 1n;
}

/** The run's own marker keys under the prefix (`~...`): never the servers', never in the history. */
export const isMarker = (prefix: string, key: Buffer) => key.toString().startsWith(`${prefix}~`);

export async function readHistory(endpoints: string[], prefix: string, timeoutMs = 300_000, log = new HistoryLog()): Promise<EtcdTruth> {
  const client = new Etcd3({ hosts: endpoints, grpcOptions: HISTORY_GRPC_OPTIONS });
  try {
    const sentinel = `${prefix}~end-of-history`;
    const final = (await client.getAll().prefix(prefix).exec()).kvs;
    const { header } = await client.put(sentinel).value("end").exec();
    const end = BigInt(header.revision);
    const events = [...log.events, ...(await watchUntil(client, prefix, log.from, end, timeoutMs))];
    return { events, final: final.filter((kv) => !isMarker(prefix, kv.key)), revision: end };
  } finally {
    client.close();
  }
}

/** Every change under the prefix from revision `from` up to (not including) `end`, where a change of a marker key must be. */
export async function watchUntil(client: Etcd3, prefix: string, from: bigint, end: bigint, timeoutMs = 300_000): Promise<EtcdEvent[]> {
  const events: EtcdEvent[] = [];
  const watcher = await client.watch().prefix(prefix).startRevision(String(from)).create();
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the history watch did not reach revision ${end} within ${timeoutMs} ms`)), timeoutMs);
    watcher.on("data", (res) => {
      for (const e of res.events) {
        const rev = BigInt(e.kv.mod_revision);
        if (rev >= end) {
          clearTimeout(t);
          resolve();
          return;
        }
        if (!isMarker(prefix, e.kv.key)) events.push({ type: e.type === "Put" ? "put" : "delete", rev, kv: e.kv });
      }
    });
    watcher.on("error", (err) => {
      clearTimeout(t);
      reject(err);
    });
  });
  await watcher.cancel();
  return events;
}
