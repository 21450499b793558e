// The Grafana dashboard (deploy/grafana/fencekeeper.json) reads only what the server exports: after a
// scripted workload that touches every panel (a wait in line, a session, KeepAlive and Renew, writes
// accepted and refused as stale, a batch, an etcd call that fails), every metric each query names is on /metrics, with every label
// the query matches or groups by, and every value it matches exactly.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { clientsFor } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import type { TestServer } from "../harness/server.js";
import { eventually, uniqueResource } from "../harness/suite.js";
import type { KeepAliveRequestSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { AsyncQueue } from "../../client/async-queue.js";
import { scrape, type Scrape } from "./support/metrics.js";
import { startMeshServer } from "./support/mesh-server.js";
import { collect } from "./support/collect.js";

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: { expr: string; datasource?: { uid: string } }[];
}
const dashboard = JSON.parse(readFileSync("deploy/grafana/fencekeeper.json", "utf8")) as { uid: string; panels: Panel[]; templating: { list: { name: string }[] } };

/** Labels Prometheus adds to every series it scrapes: not on /metrics. */
const TARGET_LABELS = new Set(["instance", "job"]);
const FUNCTIONS = new Set(["sum", "min", "max", "count", "avg", "rate", "irate", "increase", "histogram_quantile", "by", "without", "le"]);

/** The metrics a query reads, each with the labels it matches (and the exact values) or groups by. */
function selectorsOf(expr: string): { metric: string; labels: Map<string, string | undefined> }[] {
  const grouped = [...expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)].flatMap((m) => m[1].split(",").map((l) => l.trim()).filter(Boolean));
  const found: { metric: string; labels: Map<string, string | undefined> }[] = [];
  const body = expr.replace(/\b(?:by|without)\s*\([^)]*\)/g, " ").replace(/\[[^\]]*\]/g, "");
  for (const m of body.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{([^}]*)\})?/g)) {
    const [, name, , matchers] = m;
    if (FUNCTIONS.has(name) || /^\d/.test(name) || !name.includes("_")) continue;
    const labels = new Map<string, string | undefined>();
    for (const l of (matchers ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)) labels.set(l[1], l[2] === "=" ? l[3] : undefined);
    // Grouping by le reads the buckets' own label; the others must be on the metric.
    for (const l of grouped) if (l !== "le" || name.endsWith("_bucket")) if (!labels.has(l)) labels.set(l, undefined);
    found.push({ metric: name, labels });
  }
  return found;
}

describe("the Grafana dashboard", () => {
  let etcd: TestEtcd;
  let server: TestServer;
  let metrics: Scrape;

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    server = await startMeshServer({ etcd: etcd.endpoint });
    const c = clientsFor(server.url);
    const ttl = { seconds: 10n, nanos: 0 };
    const resource = uniqueResource("dashboard");

    // A holder, and a waiter whose turn comes when the holder lets go.
    const first = await c.lease.acquire({ resource, ttl, holder: "first" });
    const waiter = c.lease.acquire({ resource, ttl, holder: "waiter", wait: true });
    await eventually(async () => (await scrape(server)).value("fencekeeper_acquire_waiting") === 1, "the waiter in line");
    await c.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token: first.token } });
    await c.lease.renew({ leaseId: first.token!.leaseId });
    const requests = new AsyncQueue<MessageInitShape<typeof KeepAliveRequestSchema>>();
    const keepAlive = collect(c.lease.keepAlive(requests));
    requests.push({ leaseId: first.token!.leaseId });
    await eventually(() => keepAlive.items.length === 1, "a KeepAlive answer");
    requests.close();
    await keepAlive.done;
    await c.lease.release({ token: first.token });
    const second = await waiter;
    // The waiter writes (a batch of two), which makes the first holder's token stale.
    await c.store.batch({
      writes: [
        { write: { case: "put", value: { resource, key: "a", value: new Uint8Array([2]), mutation: { token: second.token } } } },
        { write: { case: "put", value: { resource, key: "b", value: new Uint8Array([3]), mutation: { token: second.token } } } },
      ],
    });
    const stale = await c.store.put({ resource, key: "k", value: new Uint8Array([4]), mutation: { token: first.token } }).catch((e) => e);
    expect((stale as ConnectError).code).to.equal(Code.FailedPrecondition);
    // A session, left open, so that the sessions gauge reads 1.
    const { sessionId } = await c.lease.openSession({ ttl, holder: "s" });
    await c.lease.acquire({ resource: uniqueResource("dashboard-session"), holder: "s", sessionId });
    // etcd frozen for one call: the etcd errors panel reads a counter that exists once an error has been counted.
    etcd.pause();
    try {
      await eventually(async () => (await scrape(server)).value("fencekeeper_serving") === 0, "not serving while etcd is frozen", 10_000);
      const unavailable = await c.lease.describe({ resource }).catch((e) => e);
      expect((unavailable as ConnectError).code).to.equal(Code.Unavailable);
    } finally {
      etcd.resume();
    }
    metrics = await scrape(server);
  });
  after(async () => {
    await server?.stop();
    await etcd?.destroy();
  });

  it("is a dashboard of Prometheus queries, each panel on the datasource variable, with ids unique", () => {
    expect(dashboard.uid).to.equal("fencekeeper");
    expect(dashboard.templating.list.map((v) => v.name)).to.include("datasource");
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).to.equal(ids.length);
    const queried = dashboard.panels.filter((p) => p.type !== "row");
    expect(queried.length).to.be.at.least(15);
    for (const p of queried) {
      expect(p.datasource?.uid, p.title).to.equal("${datasource}");
      expect(p.targets, p.title).to.not.be.empty;
    }
  });

  it("reads only metrics the server exports, with the labels and values its queries use", () => {
    const problems: string[] = [];
    let checked = 0;
    for (const p of dashboard.panels) {
      for (const t of p.targets ?? []) {
        const selectors = selectorsOf(t.expr);
        if (selectors.length === 0) problems.push(`${p.title}: no metric in ${t.expr}`);
        for (const { metric, labels } of selectors) {
          checked++;
          const samples = metrics.samples.filter((s) => s.name === metric);
          if (samples.length === 0) {
            problems.push(`${p.title}: ${metric} is not exported`);
            continue;
          }
          for (const [label, value] of labels) {
            if (TARGET_LABELS.has(label)) continue;
            if (!samples.some((s) => label in s.labels)) problems.push(`${p.title}: ${metric} has no label ${label}`);
            else if (value !== undefined && !samples.some((s) => s.labels[label] === value)) problems.push(`${p.title}: ${metric} has no ${label}="${value}" after the workload`);
          }
        }
      }
    }
    expect(problems).to.deep.equal([]);
    expect(checked).to.be.at.least(25);
  });

  it("the workload moved what the new panels show: sessions, the wait in line, writes per etcd request", () => {
    expect(metrics.value("fencekeeper_sessions_held")).to.equal(1);
    expect(metrics.value("fencekeeper_acquire_wait_seconds_count", { result: "turn" })).to.equal(1);
    expect(metrics.value("fencekeeper_etcd_request_writes_count")).to.be.at.least(3);
    expect(metrics.value("fencekeeper_store_writes_refused_total", { grpc_method: "Put", reason: "STALE_TOKEN" })).to.equal(1);
  });

  it("the query reader finds what a query names (a check of this test's own parser)", () => {
    expect(selectorsOf('sum by (grpc_method, le) (rate(grpc_server_handling_seconds_bucket{grpc_type="unary"}[5m]))')).to.deep.equal([
      { metric: "grpc_server_handling_seconds_bucket", labels: new Map<string, string | undefined>([["grpc_type", "unary"], ["grpc_method", undefined], ["le", undefined]]) },
    ]);
    expect(selectorsOf("sum(rate(a_sum[1m])) / sum(rate(a_count[1m]))").map((s) => s.metric)).to.deep.equal(["a_sum", "a_count"]);
  });
});
