// Server reflection, checked with buf curl: an outside client that has none of fencekeeper's protos
// lists every method and calls them, learning the schema from the server alone.
import { expect } from "chai";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import type { TestServer } from "../harness/server.js";
import { uniqueResource } from "../harness/suite.js";
import { ServerReflection as ServerReflectionV1alpha } from "../../gen/ts-grpc/grpc/reflection/v1alpha/reflection_pb.js";
import { bufCurl } from "./support/buf-curl.js";
import { startMeshServer } from "./support/mesh-server.js";

const METHODS = [
  "fencekeeper.v1.FencedStoreService/Delete",
  "fencekeeper.v1.FencedStoreService/Get",
  "fencekeeper.v1.FencedStoreService/GetFence",
  "fencekeeper.v1.FencedStoreService/Put",
  "fencekeeper.v1.FencedStoreService/Range",
  "fencekeeper.v1.FencedStoreService/Txn",
  "fencekeeper.v1.LeaseService/Acquire",
  "fencekeeper.v1.LeaseService/CloseSession",
  "fencekeeper.v1.LeaseService/Describe",
  "fencekeeper.v1.LeaseService/KeepAlive",
  "fencekeeper.v1.LeaseService/ListTokenKeys",
  "fencekeeper.v1.LeaseService/Observe",
  "fencekeeper.v1.LeaseService/OpenSession",
  "fencekeeper.v1.LeaseService/Release",
  "fencekeeper.v1.LeaseService/Renew",
  "grpc.health.v1.Health/Check",
  "grpc.health.v1.Health/List",
  "grpc.health.v1.Health/Watch",
  "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
  "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

const GRPC = ["--protocol", "grpc", "--http2-prior-knowledge"];

describe("server reflection", () => {
  let etcd: TestEtcd;
  let server: TestServer;
  let without: TestServer;

  before(async () => {
    etcd = await startEtcd();
    [server, without] = await Promise.all([
      startMeshServer({ etcd: etcd.endpoint }),
      startMeshServer({ etcd: etcd.endpoint, args: ["--reflection", "off"] }),
    ]);
  });
  after(async () => {
    await Promise.all([server?.stop(), without?.stop()]);
    await etcd?.destroy();
  });

  it("buf curl lists every method of every service", async () => {
    const run = await bufCurl([...GRPC, "--list-methods", server.url]);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout.trim().split("\n")).to.deep.equal(METHODS);
  });

  it("buf curl calls methods through reflection alone: Acquire, Describe, and a health Check", async () => {
    const resource = uniqueResource("reflected");
    const acquired = await bufCurl([...GRPC, "-d", JSON.stringify({ resource, ttl: "10s", holder: "buf" }), `${server.url}/fencekeeper.v1.LeaseService/Acquire`]);
    expect(acquired.code, acquired.stderr).to.equal(0);
    const token = JSON.parse(acquired.stdout).token;
    expect(token.resource).to.equal(resource);

    const described = await bufCurl([...GRPC, "-d", JSON.stringify({ resource }), `${server.url}/fencekeeper.v1.LeaseService/Describe`]);
    expect(described.code, described.stderr).to.equal(0);
    expect(JSON.parse(described.stdout)).to.deep.include({ held: true, holder: "buf" });

    const health = await bufCurl([...GRPC, "-d", '{"service":""}', `${server.url}/grpc.health.v1.Health/Check`]);
    expect(health.code, health.stderr).to.equal(0);
    expect(JSON.parse(health.stdout)).to.deep.equal({ status: "SERVING" });
  });

  it("answers v1alpha for older tools", async () => {
    const client = createClient(ServerReflectionV1alpha, createGrpcTransport({ baseUrl: server.url }));
    const answers = [];
    async function* questions() {
      yield { messageRequest: { case: "listServices", value: "" } } as const;
      yield { messageRequest: { case: "fileContainingSymbol", value: "fencekeeper.v1.LeaseService.Acquire" } } as const;
      yield { messageRequest: { case: "fileContainingSymbol", value: "no.such.Symbol" } } as const;
    }
    for await (const res of client.serverReflectionInfo(questions())) {
      answers.push(res);
    }
    expect(answers).to.have.length(3);
    const [list, file, missing] = answers.map((a) => a.messageResponse);
    expect(list.case === "listServicesResponse" && list.value.service.map((s) => s.name)).to.include.members([
      "fencekeeper.v1.LeaseService",
      "fencekeeper.v1.FencedStoreService",
      "grpc.health.v1.Health",
    ]);
    // The file defining the method, then what it imports (token, duration, status, any).
    expect(file.case === "fileDescriptorResponse" && file.value.fileDescriptorProto.length).to.be.greaterThan(3);
    expect(missing.case === "errorResponse" && missing.value.errorCode).to.equal(5);
  });

  it("with --reflection off, buf curl cannot list anything", async () => {
    const run = await bufCurl([...GRPC, "--list-methods", without.url]);
    expect(run.code).to.not.equal(0);
    expect(run.stderr).to.match(/unimplemented/i);
  });
});
