// Traces (docs/operations.md, "Tracing"): a real server sends its spans over OTLP/HTTP to a receiver in
// this process, and the test reads the trees back. The calls come from the SDK (client/) inside a span
// of the test's own, so the server must continue the trace the SDK propagates as a traceparent.
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import protobuf from "protobufjs";
import { context, type Span as ApiSpan, type Tracer } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider as TracerProvider } from "@opentelemetry/sdk-trace-base";
import { FencekeeperClient } from "../../client/index.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, uniqueResource } from "../harness/suite.js";
import { connectUnary } from "../harness/wire.js";

// The parts of OTLP's ExportTraceServiceRequest (opentelemetry/proto/collector/trace/v1) the test reads.
const OTLP = protobuf.parse(`
  syntax = "proto3";
  message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
  message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
  message Resource { repeated KeyValue attributes = 1; }
  message ScopeSpans { repeated Span spans = 2; }
  message Span {
    bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6;
    repeated KeyValue attributes = 9; repeated Link links = 13;
  }
  message Link { bytes trace_id = 1; bytes span_id = 2; }
  message KeyValue { string key = 1; AnyValue value = 2; }
  message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; } }
`).root.lookupType("ExportTraceServiceRequest");

interface Received {
  traceId: string;
  spanId: string;
  parent: string;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
}

type Wire = { key: string; value?: { stringValue?: string; boolValue?: boolean; intValue?: string; doubleValue?: number } };
const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString("hex");
const attrs = (list: Wire[] | undefined) =>
  Object.fromEntries((list ?? []).map((a) => [a.key, a.value?.stringValue ?? a.value?.boolValue ?? (a.value?.intValue !== undefined ? Number(a.value.intValue) : a.value?.doubleValue ?? "")]));

/** An OTLP/HTTP receiver (protobuf), keeping every span it is sent. */
async function startReceiver(): Promise<{ url: string; spans: Received[]; close(): Promise<void> }> {
  const spans: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url !== "/v1/traces" || req.headers["content-type"] !== "application/x-protobuf") {
        res.writeHead(404).end();
        return;
      }
      const body = OTLP.toObject(OTLP.decode(Buffer.concat(chunks)), { longs: String, defaults: false }) as {
        resourceSpans?: { resource?: { attributes?: Wire[] }; scopeSpans?: { spans?: (Record<string, never> & { attributes?: Wire[]; links?: Record<string, Uint8Array>[] })[] }[] }[];
      };
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attrs(rs.resource?.attributes)["service.name"]);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: hex(s.traceId),
              spanId: hex(s.spanId),
              parent: hex(s.parentSpanId),
              name: s.name,
              kind: s.kind,
              service,
              attributes: attrs(s.attributes),
              links: (s.links ?? []).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const SERVER = 2; // SpanKind.SERVER, as OTLP numbers it (0 is unspecified)
const CLIENT = 3;

for (const fastPath of ["on", "off"]) describe(`tracing: spans over OTLP, continuing the caller's trace (unary fast path ${fastPath})`, function () {
  this.timeout(60_000);
  let etcd: TestEtcd;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let server: TestServer;
  let client: FencekeeperClient;
  let provider: TracerProvider;
  let contextManager: AsyncLocalStorageContextManager;
  let tracer: Tracer;

  before(async function () {
    etcd = await startEtcd();
    receiver = await startReceiver();
    server = await startServer({ etcd: etcd.endpoint, args: ["--otlp-endpoint", receiver.url, "--otlp-batch-delay", "100", "--unary-fast-path", fastPath] });
    client = new FencekeeperClient({ servers: server.url, coalesceWrites: false, sessions: false }); // a lease each: one client plays the holder and the waiter
    // The caller's own tracing: spans made here only to be the parents of the SDK's calls (nothing exported).
    contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    provider = new TracerProvider();
    tracer = provider.getTracer("test");
  });
  after(async function () {
    await client?.close();
    await server?.stop();
    await receiver?.close();
    await etcd?.destroy();
    await provider?.shutdown();
    context.disable();
  });

  /** Runs fn in a span of the caller's; returns its ids and fn's result. */
  async function traced<T>(name: string, fn: () => Promise<T>): Promise<{ traceId: string; spanId: string; result: T }> {
    return tracer.startActiveSpan(name, async (span: ApiSpan) => {
      try {
        return { ...span.spanContext(), result: await fn() };
      } finally {
        span.end();
      }
    });
  }

  const serverSpans = (traceId: string, method: string) => receiver.spans.filter((s) => s.traceId === traceId && s.kind === SERVER && s.name === method);

  it("a waited Acquire: a server span under the caller's, with its wait in line and its etcd requests as children", async () => {
    const resource = uniqueResource("traced-wait");
    const holder = await client.acquire(resource, { ttl: 10_000 });
    const waiting = traced("caller", () => client.acquire(resource, { ttl: 10_000, wait: 20_000 }));
    await eventually(async () => (await client.describe(resource)).waiters === 1, "the traced Acquire waits in line", 10_000);
    await holder.release();
    const { traceId, spanId, result: lease } = await waiting;
    await lease.release();

    let acquire: Received | undefined;
    await eventually(
      () => {
        acquire = serverSpans(traceId, "fencekeeper.v1.LeaseService/Acquire")[0];
        return acquire !== undefined && receiver.spans.some((s) => s.parent === acquire!.spanId && s.name === "wait in line");
      },
      "the server's Acquire span and its wait in line are exported",
      15_000,
    );
    const a = acquire!;
    expect(a.parent, "the server span's parent is the caller's span").to.equal(spanId);
    expect(a.service).to.equal("fencekeeper");
    expect(a.attributes).to.include({ "rpc.system": "grpc", "rpc.service": "fencekeeper.v1.LeaseService", "rpc.method": "Acquire", "fencekeeper.resource": resource, "rpc.grpc.status_code": 0 });
    const children = receiver.spans.filter((s) => s.traceId === traceId && s.parent === a.spanId);
    const wait = children.find((s) => s.name === "wait in line")!;
    expect(wait.attributes).to.include({ "fencekeeper.resource": resource });
    const etcdSpans = receiver.spans.filter((s) => s.traceId === traceId && (s.parent === a.spanId || s.parent === wait.spanId) && s.kind === CLIENT);
    expect(etcdSpans.length, `etcd requests under the Acquire: ${JSON.stringify(children.map((s) => s.name))}`).to.be.greaterThan(0);
    for (const e of etcdSpans) {
      expect(e.name).to.match(/^etcd /);
      expect(e.attributes).to.include({ "db.system.name": "etcd" });
    }
    // The holder's Acquire was made outside any span: the SDK sent no traceparent, and the server started a trace of its own.
    expect(serverSpans(traceId, "fencekeeper.v1.LeaseService/Acquire")).to.have.length(1);
    const untraced = receiver.spans.filter((s) => s.kind === SERVER && s.attributes["fencekeeper.resource"] === resource && s.traceId !== traceId);
    expect(untraced.map((s) => s.name)).to.include("fencekeeper.v1.LeaseService/Acquire");
    for (const s of untraced) expect(s.parent, `${s.name} has no parent`).to.equal("");
  });

  it("a refused call's span carries its code and ErrorInfo reason", async () => {
    const resource = uniqueResource("traced-refusal");
    const holder = await client.acquire(resource, { ttl: 10_000 });
    const { traceId } = await traced("caller", () => client.acquire(resource, { ttl: 10_000 }).then(() => expect.fail("acquired a held resource"), () => undefined));
    await holder.release();
    let span: Received | undefined;
    await eventually(() => (span = serverSpans(traceId, "fencekeeper.v1.LeaseService/Acquire")[0]) !== undefined, "the refused Acquire's span is exported", 15_000);
    expect(span!.attributes).to.include({ "rpc.grpc.status_code": Code.Aborted, "fencekeeper.error.reason": "RESOURCE_HELD" });
  });

  it("a request refused before its handler (a body that is not JSON) is traced too, under the traceparent it came with", async () => {
    const traceId = randomBytes(16).toString("hex");
    const spanId = randomBytes(8).toString("hex");
    const refused = await connectUnary(server.url, "/fencekeeper.v1.LeaseService/Describe", "{not json", { "content-type": "application/json", traceparent: `00-${traceId}-${spanId}-01` });
    expect(refused.code).to.equal(Code.InvalidArgument);
    let span: Received | undefined;
    await eventually(() => (span = serverSpans(traceId, "fencekeeper.v1.LeaseService/Describe")[0]) !== undefined, "the refused call's span is exported", 15_000);
    expect(span!.parent).to.equal(spanId);
    expect(span!.attributes).to.include({ "rpc.grpc.status_code": Code.InvalidArgument });
  });

  it("a batched Put: the Puts that rode one etcd request each link to its span, which says how many writes it carried", async () => {
    const resource = uniqueResource("traced-batch");
    const lease = await client.acquire(resource, { ttl: 20_000 });
    // The committer has two requests in flight at most: concurrent Puts beyond those ride a shared one.
    const puts = await Promise.all(Array.from({ length: 12 }, (_, i) => traced(`put ${i}`, () => lease.put(`k${i}`, `v${i}`))));
    await lease.release();
    const traces = new Set(puts.map((p) => p.traceId));

    let batch: Received | undefined;
    let members: Received[] = [];
    await eventually(
      () => {
        const putSpans = receiver.spans.filter((s) => traces.has(s.traceId) && s.kind === SERVER && s.name === "fencekeeper.v1.FencedStoreService/Put");
        batch = receiver.spans.find((s) => traces.has(s.traceId) && s.kind === CLIENT && Number(s.attributes["fencekeeper.etcd.writes"]) > 1);
        members = batch ? putSpans.filter((p) => p.links.some((l) => l.spanId === batch!.spanId && l.traceId === batch!.traceId)) : [];
        return putSpans.length === puts.length && batch !== undefined && members.length === Number(batch.attributes["fencekeeper.etcd.writes"]);
      },
      "every Put's span is exported, and those of one shared etcd request link to it",
      15_000,
    );
    expect(batch!.name).to.match(/^etcd /);
    expect(members.length).to.be.at.least(2);
    // Each member is a call of its own, in its own trace; the request is the child of one of them.
    expect(new Set(members.map((m) => m.traceId)).size).to.equal(members.length);
    expect(members.map((m) => m.spanId)).to.include(batch!.parent);
    for (const m of members) {
      expect(m.attributes).to.include({ "rpc.method": "Put", "fencekeeper.resource": resource, "rpc.grpc.status_code": 0 });
      expect(puts.find((p) => p.traceId === m.traceId)!.spanId, "the Put's span continues its caller's").to.equal(m.parent);
    }
  });
});

describe("tracing: --otlp-sample-ratio 0 records only the traces callers started and sampled", function () {
  this.timeout(60_000);
  let etcd: TestEtcd;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let server: TestServer;
  let client: FencekeeperClient;
  let provider: TracerProvider;

  before(async function () {
    etcd = await startEtcd();
    receiver = await startReceiver();
    server = await startServer({ etcd: etcd.endpoint, args: ["--otlp-endpoint", receiver.url, "--otlp-batch-delay", "100", "--otlp-sample-ratio", "0"] });
    client = new FencekeeperClient({ servers: server.url, coalesceWrites: false, sessions: false }); // a lease each: one client plays the holder and the waiter
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    provider = new TracerProvider();
  });
  after(async function () {
    await client?.close();
    await server?.stop();
    await receiver?.close();
    await etcd?.destroy();
    await provider?.shutdown();
    context.disable();
  });

  it("a call without a traceparent leaves no span; one with a sampled traceparent is traced", async () => {
    const untraced = uniqueResource("unsampled");
    const traced = uniqueResource("sampled");
    await (await client.acquire(untraced, { ttl: 10_000 })).release();
    const caller = await provider.getTracer("test").startActiveSpan("caller", async (span: ApiSpan) => {
      try {
        await (await client.acquire(traced, { ttl: 10_000 })).release();
        return span.spanContext();
      } finally {
        span.end();
      }
    });
    // Spans go out in the order they end: once the traced call's are in, the untraced one's would be too.
    await eventually(() => receiver.spans.some((s) => s.traceId === caller.traceId && s.kind === SERVER), "the sampled call's span is exported", 15_000);
    expect(receiver.spans.filter((s) => s.attributes["fencekeeper.resource"] === untraced)).to.deep.equal([]);
    expect(receiver.spans.every((s) => s.traceId === caller.traceId), "only the caller's trace is recorded").to.equal(true);
  });
});

describe("tracing: a collector that cannot be reached", function () {
  this.timeout(60_000);
  let etcd: TestEtcd;
  let server: TestServer;
  let client: FencekeeperClient;

  before(async function () {
    etcd = await startEtcd();
    // A port nobody listens on: the receiver's, closed.
    const gone = await startReceiver();
    await gone.close();
    server = await startServer({ etcd: etcd.endpoint, args: ["--otlp-endpoint", gone.url, "--otlp-batch-delay", "100"] });
    client = new FencekeeperClient({ servers: server.url, coalesceWrites: false, sessions: false }); // a lease each: one client plays the holder and the waiter
  });
  after(async function () {
    await client?.close();
    await server?.stop();
    await etcd?.destroy();
  });

  it("is a warning in the log, and the calls are served as ever", async () => {
    const resource = uniqueResource("collector-down");
    await (await client.acquire(resource, { ttl: 10_000 })).release();
    await eventually(() => server.logs.some((l) => l.includes("spans not sent to the OTLP endpoint")), "the failed export is logged", 30_000);
    expect(server.logs.filter((l) => l.includes("spans not sent to the OTLP endpoint")), "once a minute at most").to.have.length(1);
    await (await client.acquire(resource, { ttl: 10_000 })).release();
  });
});
