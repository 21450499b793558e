// TLS for deployments without a sidecar: the server serves gRPC (ALPN h2) and Connect over HTTP/1.1 on
// one TLS port, can require client certificates, and reaches an etcd that wants TLS and a client
// certificate.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { eventually, uniqueResource } from "../harness/suite.js";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { bufCurl } from "./support/buf-curl.js";
import { makeCerts, type Certs } from "./support/certs.js";
import { startMeshServer } from "./support/mesh-server.js";
import { startTlsEtcd, type TlsEtcd } from "./support/tls-etcd.js";
import type { TestServer } from "../harness/server.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("TLS", () => {
  let certs: Certs;
  let etcd: TestEtcd;
  const servers: TestServer[] = [];
  const serve = async (args: string[], endpoint = etcd.endpoint) => {
    const s = await startMeshServer({ etcd: endpoint, args });
    servers.push(s);
    return s;
  };

  before(async () => {
    certs = makeCerts();
    etcd = await startEtcd();
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await etcd?.destroy();
    certs?.remove();
  });

  it("serves gRPC over HTTP/2 and Connect over HTTP/1.1 on one TLS port", async () => {
    const server = await serve(["--tls-cert", certs.serverCert, "--tls-key", certs.serverKey]);
    expect(server.url).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = readFileSync(certs.ca);
    const grpc = createClient(LeaseService, createGrpcTransport({ baseUrl: server.url, nodeOptions: { ca } }));
    const connect = createClient(LeaseService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", nodeOptions: { ca } }));
    const resource = uniqueResource("tls");
    const { token } = await grpc.acquire({ resource, ttl: ttl(5), holder: "tls" });
    expect((await connect.describe({ resource })).token).to.deep.include({ generation: token!.generation });

    const listed = await bufCurl(["--cacert", certs.ca, "--protocol", "grpc", "--list-methods", server.url]);
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.include("fencekeeper.v1.LeaseService/Acquire");
  });

  it("with --tls-client-ca, serves clients whose certificate the CA signed, and no others", async () => {
    const server = await serve(["--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, "--tls-client-ca", certs.ca]);
    const ca = readFileSync(certs.ca);
    const health = (nodeOptions: object) => createClient(Health, createGrpcTransport({ baseUrl: server.url, nodeOptions: { ca, ...nodeOptions } }));

    const trusted = await health({ cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) }).check({ service: "" });
    expect(trusted.status).to.equal(Status.SERVING);
    for (const [who, options] of [
      ["no certificate", {}],
      ["a certificate from another CA", { cert: readFileSync(certs.strangerCert), key: readFileSync(certs.strangerKey) }],
    ] as const) {
      const err = await health(options).check({ service: "" }, { timeoutMs: 5000 }).catch((e) => e);
      expect(err, who).to.be.instanceOf(ConnectError);
      expect((err as ConnectError).code, who).to.not.equal(Code.DeadlineExceeded);
    }
  });

  describe("to etcd", () => {
    let tlsEtcd: TlsEtcd;
    before(async () => {
      tlsEtcd = await startTlsEtcd(certs);
    });
    after(async () => {
      await Promise.all(servers.splice(0).map((s) => s.stop()));
      await tlsEtcd?.destroy();
    });

    it("reaches an etcd that wants TLS and a client certificate, and is NOT_SERVING without the certificate", async () => {
      const withCert = await serve(["--etcd-ca", certs.ca, "--etcd-cert", certs.clientCert, "--etcd-key", certs.clientKey], tlsEtcd.endpoint);
      const withoutCert = await serve(["--etcd-ca", certs.ca], tlsEtcd.endpoint);
      const lease = createClient(LeaseService, createGrpcTransport({ baseUrl: withCert.url }));
      const resource = uniqueResource("etcd-tls");
      const { token } = await lease.acquire({ resource, ttl: ttl(5), holder: "tls" });
      expect(token!.generation > 0n).to.equal(true);
      expect((await createClient(Health, createGrpcTransport({ baseUrl: withCert.url })).check({ service: "" })).status).to.equal(Status.SERVING);

      const refused = createClient(Health, createGrpcTransport({ baseUrl: withoutCert.url }));
      await eventually(async () => (await refused.check({ service: "" })).status === Status.NOT_SERVING, "NOT_SERVING without a client certificate");
      const err = await createClient(LeaseService, createGrpcTransport({ baseUrl: withoutCert.url })).describe({ resource }).catch((e) => e);
      expect((err as ConnectError).code).to.equal(Code.Unavailable);
    });
  });
});
