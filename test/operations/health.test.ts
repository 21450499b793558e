// gRPC health: what Kubernetes probes, Envoy and grpc_health_probe ask. The server and its services
// are NOT_SERVING while etcd is away and SERVING again when it is back; liveness never follows etcd.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { eventually, within } from "../harness/suite.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import type { TestServer } from "../harness/server.js";
import { HealthCheckResponse_ServingStatus as Status } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { healthClient, startMeshServer } from "./support/mesh-server.js";
import { collect } from "./support/collect.js";
import { metricsUrl } from "./support/metrics.js";

const SERVICES = ["", "fencekeeper.v1.LeaseService", "fencekeeper.v1.FencedStoreService"];

describe("gRPC health", () => {
  let etcd: TestEtcd;
  let server: TestServer;
  let health: ReturnType<typeof healthClient>;

  before(async () => {
    etcd = await startEtcd();
    server = await startMeshServer({ etcd: etcd.endpoint });
    health = healthClient(server.url);
  });
  after(async () => {
    await server?.stop();
    await etcd?.destroy();
  });

  const statusOf = async (service: string) => (await health.check({ service }, { timeoutMs: 2000 })).status;

  it("reports SERVING for the server, each service and liveness, and NOT_FOUND for a name it does not know", async () => {
    for (const service of [...SERVICES, "liveness"]) expect(await statusOf(service), service).to.equal(Status.SERVING);
    const err = await health.check({ service: "no.such.Service" }).catch((e) => e);
    expect(err).to.be.instanceOf(ConnectError);
    expect((err as ConnectError).code).to.equal(Code.NotFound);
  });

  it("lists every name it reports on", async () => {
    const { statuses } = await health.list({});
    expect(Object.keys(statuses).sort()).to.deep.equal([...SERVICES, "liveness"].sort());
    for (const s of Object.values(statuses)) expect(s.status).to.equal(Status.SERVING);
  });

  it("goes NOT_SERVING while etcd is stopped and SERVING again once it is back; Watch sees each change", async function () {
    this.timeout(60_000);
    const watchCtl = new AbortController();
    const watch = collect(health.watch({ service: "" }, { signal: watchCtl.signal }));
    await eventually(() => watch.items.length === 1, "the watch's first answer");

    await etcd.stop();
    await eventually(async () => (await statusOf("")) === Status.NOT_SERVING, "NOT_SERVING with etcd stopped", 10_000);
    for (const service of SERVICES) expect(await statusOf(service), service).to.equal(Status.NOT_SERVING);
    expect(await statusOf("liveness")).to.equal(Status.SERVING);

    await etcd.start();
    await eventually(async () => (await statusOf("")) === Status.SERVING, "SERVING once etcd is back", 30_000);
    for (const service of SERVICES) expect(await statusOf(service), service).to.equal(Status.SERVING);

    expect(watch.items.map((r) => r.status)).to.deep.equal([Status.SERVING, Status.NOT_SERVING, Status.SERVING]);
    watchCtl.abort();
    await watch.done;
  });

  it("answers GET /readyz and /livez on the metrics port as the health service answers \"\" and liveness, for probes of a TLS API port", async function () {
    this.timeout(60_000);
    const probe = async (path: string) => (await fetch(new URL(path, metricsUrl(server)))).status;
    expect(await probe("/readyz")).to.equal(200);
    expect(await probe("/livez")).to.equal(200);
    expect(await probe("/healthz")).to.equal(404);
    await etcd.stop();
    try {
      await eventually(async () => (await probe("/readyz")) === 503, "/readyz 503 with etcd stopped", 10_000);
      expect(await probe("/livez")).to.equal(200);
    } finally {
      await etcd.start();
    }
    await eventually(async () => (await probe("/readyz")) === 200, "/readyz 200 once etcd is back", 30_000);
  });

  it("a Watch of a name it does not know answers SERVICE_UNKNOWN and stays open", async () => {
    const ctl = new AbortController();
    const watch = collect(health.watch({ service: "no.such.Service" }, { signal: ctl.signal }));
    await eventually(() => watch.items.length === 1, "the watch's first answer");
    expect(watch.items[0].status).to.equal(Status.SERVICE_UNKNOWN);
    const state = await within(watch.done.then(() => "ended"), 300, "open");
    expect(state).to.equal("open");
    ctl.abort();
    await watch.done;
  });
});
