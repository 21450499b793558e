// Fenced Put, 100-byte values: fencekeeper beside the etcd3 peers of put-peers.ts, in one run on one etcd.
//   put:     throughput and p99 at 1, 8, 64 and 256 writers, (a) on distinct keys of one resource and
//            (b) on 64 resources (writer w writes resource w % 64, each under its own token); ratios to
//            the one-txn-per-write peer and to the nested-batch ceiling (issue 9, targets 1 and 5).
//   latency: one writer, p50 of a fenced Put beside p50 of the same txn sent directly (target 2).
// fencekeeper is called through @grpc/grpc-js (grpc-store.ts), the library etcd3 uses; the connect
// client's figure at 1 writer is printed once, for information.
import { Etcd3 } from "etcd3";
import type { FencingToken } from "../gen/ts/fencekeeper/v1/token_pb.js";
import { clientsFor } from "../test/harness/clients.js";
import { GrpcStore } from "./grpc-store.js";
import { startRelay } from "./relay.js";
import { measure, merge, sample, summarize, type Measurement, type Samples } from "./measure.js";
import { ByHand, Ceiling, CEILING_BATCH, initFences } from "./put-peers.js";
import { ms, num, ratio, Table } from "./report.js";
import type { Check, Context, Flags, Scenario } from "./scenario.js";

const VALUE = Buffer.alloc(100, "v");
const WRITERS = [1, 8, 64, 256];
const RESOURCES_B = 64;
/** Where issue 9's targets 1 and 2 are measured. */
const TARGET_WRITERS = 64;

interface Layout {
  /** "a" and "b" as in issue 9; other names for other scenarios' resources. */
  name: string;
  title: string;
  /** Resource names and tokens; writer w writes resource w % length. */
  resources: { name: string; token: FencingToken }[];
}

/** The three ways of doing the same writes, one setup shared by the scenarios here. */
class Paths {
  readonly fk: GrpcStore;
  readonly connect: ReturnType<typeof clientsFor>;
  readonly etcd: Etcd3;
  readonly byHand: ByHand;
  readonly ceiling: Ceiling;
  readonly #ctx: Context;
  readonly #prefix: string;

  constructor(ctx: Context) {
    this.#ctx = ctx;
    this.fk = new GrpcStore(ctx.server().url);
    this.connect = clientsFor(ctx.server().url);
    this.etcd = new Etcd3({ hosts: ctx.etcd.endpoint });
    this.#prefix = `/bench-${ctx.runId}`;
    this.byHand = new ByHand(this.etcd, `${this.#prefix}/by-hand/`);
    this.ceiling = new Ceiling(this.etcd, `${this.#prefix}/ceiling/`);
  }

  /** Acquires the layout's resources through fencekeeper and creates the peers' fences. */
  async layout(name: Layout["name"], count: number, title: string): Promise<Layout> {
    const names = Array.from({ length: count }, (_, k) => (count === 1 ? `bench-${this.#ctx.runId}-${name}` : `bench-${this.#ctx.runId}-${name}-${k}`));
    const resources = await Promise.all(
      names.map(async (resource) => {
        // ORDER mode (the default) judges a write by the fence alone, so the TTL need not outlast the run.
        const { token } = await this.connect.lease.acquire({ resource, ttl: { seconds: 60n, nanos: 0 }, holder: "bench" });
        return { name: resource, token: token! };
      }),
    );
    await initFences(this.etcd, `${this.#prefix}/by-hand/`, names);
    await initFences(this.etcd, `${this.#prefix}/ceiling/`, names);
    return { name, title, resources };
  }

  /** The three writers of one layout; `row` keeps the keys of each row apart. */
  ops(layout: Layout, row: string) {
    const pick = (w: number) => layout.resources[w % layout.resources.length];
    const key = (w: number, i: number) => `${row}/w${w}/${i}`;
    const peer = (w: number, i: number) => ({ resource: pick(w).name, generation: pick(w).token.generation, key: key(w, i), value: VALUE });
    return {
      fk: (w: number, i: number) => this.fk.put({ resource: pick(w).name, key: key(w, i), value: VALUE, mutation: { token: pick(w).token } }),
      connect: (w: number, i: number) => this.connect.store.put({ resource: pick(w).name, key: `${key(w, i)}c`, value: VALUE, mutation: { token: pick(w).token } }),
      byHand: (w: number, i: number) => this.byHand.write(peer(w, i)),
      ceiling: (w: number, i: number) => this.ceiling.write(peer(w, i)),
    };
  }

  close(): void {
    this.fk.close();
    this.etcd.close();
  }
}

interface Row {
  writers: number;
  fencekeeper: Measurement;
  byHand: Measurement;
  ceiling: Measurement & { writesPerRequest: number };
  vsByHand: number;
  vsCeiling: number;
}

const failed = (m: Measurement) => m.errors > 0 || m.stuck > 0;
const cell = (m: Measurement) => (failed(m) ? `${num(m.perSecond)}!` : num(m.perSecond));

export const put: Scenario = {
  name: "put",
  about: "fenced Put throughput and p99 at 1-256 writers, one resource and 64 resources, vs etcd3 by hand and the nested-batch ceiling",
  estimate: (f: Flags) => (2 * WRITERS.length * 3 + 1) * (f.seconds + 0.5) + 5,
  async run(ctx) {
    const paths = new Paths(ctx);
    const seconds = ctx.flags.seconds;
    const json: Record<string, unknown> = { seconds, valueBytes: VALUE.length, writers: WRITERS, ceilingBatch: CEILING_BATCH };
    const checks: Check[] = [];
    const errors: string[] = [];
    try {
      const layouts = [
        await paths.layout("a", 1, "(a) distinct keys of one resource"),
        await paths.layout("b", RESOURCES_B, `(b) ${RESOURCES_B} resources, writer w on resource w % ${RESOURCES_B}, each with its own token`),
      ];
      for (const layout of layouts) {
        const table = new Table(`fenced Put ${layout.title}: writes/s, p99 ms, ${seconds} s per measurement ("!" marks errors)`, [
          { title: "writers", width: 7 },
          { title: "fencekeeper", width: 11 },
          { title: "p99", width: 7 },
          { title: "etcd3 by hand", width: 13 },
          { title: "p99", width: 7 },
          { title: "ceiling", width: 8 },
          { title: "p99", width: 7 },
          { title: "batch", width: 5 },
          { title: "fk/by hand", width: 10 },
          { title: "fk/ceiling", width: 10 },
        ]);
        const rows: Row[] = [];
        let connect: Measurement | undefined;
        for (const writers of WRITERS) {
          const row = `${layout.name}${writers}`;
          const ops = paths.ops(layout, row);
          ctx.progress(`put (${layout.name}) ${writers} writers: fencekeeper`);
          const fencekeeper = await measure({ workers: writers, seconds, op: ops.fk });
          ctx.progress(`put (${layout.name}) ${writers} writers: etcd3 by hand`);
          const byHand = await measure({ workers: writers, seconds, op: ops.byHand });
          ctx.progress(`put (${layout.name}) ${writers} writers: nested-batch ceiling`);
          const before = { requests: paths.ceiling.requests, writes: paths.ceiling.writes };
          const ceiling = await measure({ workers: writers, seconds, op: ops.ceiling });
          const writesPerRequest = (paths.ceiling.writes - before.writes) / Math.max(1, paths.ceiling.requests - before.requests);
          const r: Row = {
            writers,
            fencekeeper,
            byHand,
            ceiling: { ...ceiling, writesPerRequest: Math.round(writesPerRequest * 10) / 10 },
            vsByHand: fencekeeper.perSecond / byHand.perSecond,
            vsCeiling: fencekeeper.perSecond / ceiling.perSecond,
          };
          rows.push(r);
          for (const [who, m] of [["fencekeeper", fencekeeper], ["by hand", byHand], ["ceiling", ceiling]] as const) {
            if (failed(m)) errors.push(`(${layout.name}) ${writers} writers, ${who}: ${m.errors} errors, ${m.stuck} stuck; first: ${m.firstError}`);
          }
          table.row([
            String(writers),
            cell(fencekeeper),
            ms(fencekeeper.p99Ms),
            cell(byHand),
            ms(byHand.p99Ms),
            cell(ceiling),
            ms(ceiling.p99Ms),
            writesPerRequest.toFixed(1),
            ratio(r.vsByHand),
            ratio(r.vsCeiling),
          ]);
          if (layout.name === "a" && writers === 1) {
            ctx.progress("put (a) 1 writer: fencekeeper through the connect client");
            connect = await measure({ workers: 1, seconds, op: ops.connect });
          }
        }
        table.note(`batch: writes per etcd request of the ceiling peer (at most ${CEILING_BATCH}).`);
        table.note(bends(rows));
        if (connect) {
          table.note(
            `for information, the connect client (test/harness/clients.ts) at 1 writer: ${num(connect.perSecond)} writes/s, ` +
              `p50 ${ms(connect.p50Ms)} ms, p99 ${ms(connect.p99Ms)} ms: ${ratio(connect.perSecond / rows[0].byHand.perSecond)} by hand` +
              (failed(connect) ? ` (${connect.errors} errors: ${connect.firstError})` : ""),
          );
        }
        json[layout.name] = { title: layout.title, rows, ...(connect ? { connectOneWriter: connect } : {}) };
        const at = rows.find((r) => r.writers === TARGET_WRITERS);
        if (at) {
          const ok = !failed(at.fencekeeper) && at.vsByHand >= 2 && at.vsCeiling >= 0.5;
          checks.push({
            target: `1${layout.name}. Put, ${TARGET_WRITERS} writers, ${layout.name === "a" ? "one resource" : `${RESOURCES_B} resources`}: >= 2x by hand (aim 3x), >= 0.5x ceiling`,
            status: ok ? "met" : "not met",
            detail: `${ratio(at.vsByHand)} by hand, ${ratio(at.vsCeiling)} ceiling (${num(at.fencekeeper.perSecond)} vs ${num(at.byHand.perSecond)} and ${num(at.ceiling.perSecond)} writes/s)`,
          });
        }
      }
      for (const e of errors) console.log(`  error ${e}`);
      json.errors = errors;
      checks.push({ target: "5. How cost grows: throughput and p99 at 1, 8, 64, 256 writers", status: "reported", detail: "the Put tables above" });
      return { json, checks };
    } finally {
      paths.close();
    }
  },
};

/** Where each path's throughput stops growing with more writers: less than 20% more from one step to the next. */
function bends(rows: Row[]): string {
  const where = (pick: (r: Row) => Measurement) => {
    for (let k = 1; k < rows.length; k++) {
      if (pick(rows[k]).perSecond < 1.2 * pick(rows[k - 1]).perSecond) return `flat from ${rows[k - 1].writers} writers`;
    }
    return "still growing";
  };
  return `curve: fencekeeper ${where((r) => r.fencekeeper)}; by hand ${where((r) => r.byHand)}; ceiling ${where((r) => r.ceiling)} (less than 1.2x from one step to the next).`;
}

/** Target 2: rounds alternate between the two paths, so that a noisy neighbour hits both alike. */
const ROUNDS = 5;

export const latency: Scenario = {
  name: "latency",
  about: "one writer: p50 of a fenced Put vs p50 of the same txn sent directly to etcd",
  estimate: (f: Flags) => 2 * f.seconds + ROUNDS + 3,
  async run(ctx) {
    const paths = new Paths(ctx);
    const seconds = ctx.flags.seconds;
    try {
      const layout = await paths.layout("latency", 1, "one resource");
      const relay = await startRelay(ctx.etcd.endpoint, `/bench-${ctx.runId}/relay/`);
      await initFences(paths.etcd, relay.prefix, [layout.resources[0].name]);
      const fk: Samples[] = [];
      const direct: Samples[] = [];
      const relayed: Samples[] = [];
      ctx.progress(`latency: one writer, ${ROUNDS} alternating rounds of ${(seconds / ROUNDS).toFixed(1)} s each`);
      try {
        for (let round = 0; round < ROUNDS; round++) {
          const ops = paths.ops(layout, `l${round}`);
          const { name, token } = layout.resources[0];
          const viaRelay = (_w: number, i: number) => relay.store.put({ resource: name, key: `l${round}/${i}`, value: VALUE, mutation: { token } });
          fk.push(await sample({ workers: 1, seconds: seconds / ROUNDS, op: ops.fk, warmUp: round === 0 }));
          direct.push(await sample({ workers: 1, seconds: seconds / ROUNDS, op: ops.byHand, warmUp: round === 0 }));
          relayed.push(await sample({ workers: 1, seconds: seconds / ROUNDS, op: viaRelay, warmUp: round === 0 }));
        }
      } finally {
        await relay.stop();
      }
      const f = summarize(1, merge(fk));
      const d = summarize(1, merge(direct));
      const r = summarize(1, merge(relayed));
      const slower = f.p50Ms / d.p50Ms;
      const table = new Table(`one writer, fenced Put: latency in ms, ${seconds} s per path in ${ROUNDS} alternating rounds`, [
        { title: "path", width: 26, left: true },
        { title: "writes", width: 7 },
        { title: "p50", width: 7 },
        { title: "p99", width: 7 },
      ]);
      table.row(["fencekeeper (grpc-js)", num(f.ops), ms(f.p50Ms), ms(f.p99Ms)]);
      table.row(["etcd txn, direct (etcd3)", num(d.ops), ms(d.p50Ms), ms(d.p99Ms)]);
      table.row(["bare relay (connect-node)", num(r.ops), ms(r.p50Ms), ms(r.p99Ms)]);
      table.note(`p50 ratio fencekeeper / direct: ${ratio(slower)} (issue 21: <= 2.50x); fencekeeper / bare relay: ${ratio(f.p50Ms / r.p50Ms)} (issue 21: <= 1.00x)`);
      table.note("bare relay: a connect-node server with no fencekeeper code that forwards the same etcd txn (relay-server.ts)");
      if (failed(f) || failed(d) || failed(r)) {
        table.note(`errors: fencekeeper ${f.errors} (${f.firstError ?? "-"}), direct ${d.errors} (${d.firstError ?? "-"}), relay ${r.errors} (${r.firstError ?? "-"})`);
      }
      const ok = !failed(f) && slower <= 2.5 && f.p50Ms <= r.p50Ms;
      return {
        json: { seconds, rounds: ROUNDS, fencekeeper: f, direct: d, relay: r, p50Ratio: slower, p50RatioToRelay: f.p50Ms / r.p50Ms },
        checks: [
          {
            target: "21.4. One writer: Put p50 <= a bare relay's and <= 2.5x a direct etcd txn",
            status: ok ? "met" : "not met",
            detail: `${ratio(slower)} direct, ${ratio(f.p50Ms / r.p50Ms)} relay (p50 ${ms(f.p50Ms)} vs ${ms(d.p50Ms)} and ${ms(r.p50Ms)} ms)`,
          },
        ],
      };
    } finally {
      paths.close();
    }
  },
};
