// Server reflection, checked with buf curl: an outside client that has none of fencekeeper's protos
// lists every method and calls them, learning the schema from the server alone. And the files it
// learns carry the proto's comments, the contract's documentation.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import type { TestServer } from "../harness/server.js";
import { uniqueResource } from "../harness/suite.js";
import { ServerReflection as ServerReflectionV1 } from "../../gen/ts-grpc/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1alpha } from "../../gen/ts-grpc/grpc/reflection/v1alpha/reflection_pb.js";
import { bufCurl } from "./support/buf-curl.js";
import { startMeshServer } from "./support/mesh-server.js";

const METHODS = [
  "fencekeeper.v1.FencedStoreService/Batch",
  "fencekeeper.v1.FencedStoreService/Delete",
  "fencekeeper.v1.FencedStoreService/Get",
  "fencekeeper.v1.FencedStoreService/GetFence",
  "fencekeeper.v1.FencedStoreService/Put",
  "fencekeeper.v1.FencedStoreService/Range",
  "fencekeeper.v1.FencedStoreService/Txn",
  "fencekeeper.v1.LeaseService/Acquire",
  "fencekeeper.v1.LeaseService/AcquireAll",
  "fencekeeper.v1.LeaseService/CloseSession",
  "fencekeeper.v1.LeaseService/Describe",
  "fencekeeper.v1.LeaseService/KeepAlive",
  "fencekeeper.v1.LeaseService/LeaseBatch",
  "fencekeeper.v1.LeaseService/LiftLockDelay",
  "fencekeeper.v1.LeaseService/ListResources",
  "fencekeeper.v1.LeaseService/ListTokenKeys",
  "fencekeeper.v1.LeaseService/Observe",
  "fencekeeper.v1.LeaseService/OpenSession",
  "fencekeeper.v1.LeaseService/Proclaim",
  "fencekeeper.v1.LeaseService/Release",
  "fencekeeper.v1.LeaseService/Renew",
  "grpc.health.v1.Health/Check",
  "grpc.health.v1.Health/List",
  "grpc.health.v1.Health/Watch",
  "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
  "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

const GRPC = ["--protocol", "grpc", "--http2-prior-knowledge"];

const LEASE_PROTO = readFileSync(new URL("../../proto/fencekeeper/v1/lease.proto", import.meta.url), "utf8");

/** The comment right above the first line of the proto text that matches, without its slashes. */
function commentAbove(protoText: string, line: RegExp): string {
  const lines = protoText.split("\n");
  const at = lines.findIndex((l) => line.test(l));
  expect(at, `${line} is in the proto file`).to.be.greaterThan(0);
  const comment: string[] = [];
  for (let i = at - 1; i >= 0 && /^\s*\/\//.test(lines[i]); i--) comment.unshift(lines[i].replace(/^\s*\/\/ ?/, ""));
  return comment.join("\n");
}

/** The leading comment that the file's source info holds for the element at path, as written. */
function leadingComment(file: FileDescriptorProto, path: number[]): string | undefined {
  const at = file.sourceCodeInfo?.location.find((l) => l.path.length === path.length && l.path.every((p, i) => p === path[i]));
  return at?.leadingComments.replace(/^ /gm, "").replace(/\n$/, "");
}

/** The files that reflection (v1 or v1alpha) answers for a symbol: its file first, then what it imports. */
async function filesContaining(url: string, version: "v1" | "v1alpha", symbol: string): Promise<FileDescriptorProto[]> {
  const transport = createGrpcTransport({ baseUrl: url });
  async function* question() {
    yield { messageRequest: { case: "fileContainingSymbol", value: symbol } } as const;
  }
  const answers =
    version === "v1"
      ? createClient(ServerReflectionV1, transport).serverReflectionInfo(question())
      : createClient(ServerReflectionV1alpha, transport).serverReflectionInfo(question());
  const files: FileDescriptorProto[] = [];
  for await (const res of answers) {
    const r = res.messageResponse;
    expect(r.case, `${version} answers ${symbol}`).to.equal("fileDescriptorResponse");
    if (r.case === "fileDescriptorResponse") files.push(...r.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b)));
  }
  return files;
}

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

  for (const version of ["v1", "v1alpha"] as const) {
    it(`serves the proto's comments (${version}): LeaseService.Acquire and AcquireRequest's fields read as in lease.proto`, async () => {
      const [lease] = await filesContaining(server.url, version, "fencekeeper.v1.LeaseService.Acquire");
      expect(lease.name).to.equal("fencekeeper/v1/lease.proto");

      // Paths into FileDescriptorProto: service = 6, method = 2; message_type = 4, field = 2.
      const s = lease.service.findIndex((x) => x.name === "LeaseService");
      const m = lease.service[s].method.findIndex((x) => x.name === "Acquire");
      const acquire = commentAbove(LEASE_PROTO, /^\s*rpc Acquire\(/);
      expect(acquire).to.match(/\w+ \w+ \w+/);
      expect(leadingComment(lease, [6, s, 2, m])).to.equal(acquire);
      expect(leadingComment(lease, [6, s])).to.equal(commentAbove(LEASE_PROTO, /^service LeaseService \{/));

      const r = lease.messageType.findIndex((x) => x.name === "AcquireRequest");
      expect(leadingComment(lease, [4, r])).to.equal(commentAbove(LEASE_PROTO, /^message AcquireRequest \{/));
      const fields = lease.messageType[r].field;
      expect(fields.length).to.be.greaterThan(3);
      // Each field's comment is looked for within AcquireRequest's body: other messages have fields of the same names.
      const start = LEASE_PROTO.search(/^message AcquireRequest \{/m);
      const body = LEASE_PROTO.slice(start, LEASE_PROTO.indexOf("\n}\n", start));
      let commented = 0;
      fields.forEach((field, f) => {
        const written = commentAbove(body, new RegExp(`^\\s+(?:\\S+ )+${field.name} = ${field.number}\\b`));
        if (written === "") return; // a field without a comment has no leading comment to serve
        commented++;
        expect(leadingComment(lease, [4, r, 2, f]), `AcquireRequest.${field.name}`).to.equal(written);
      });
      expect(commented).to.be.greaterThan(3);
    });
  }

  it("serves every file it describes with its comments, ErrorReason's, gRPC's and Google's included", async () => {
    const files = new Map<string, FileDescriptorProto>();
    const symbols = ["fencekeeper.v1.LeaseService", "fencekeeper.v1.FencedStoreService", "fencekeeper.v1.ErrorReason", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"];
    for (const symbol of symbols) {
      for (const file of await filesContaining(server.url, "v1", symbol)) files.set(file.name, file);
    }
    expect([...files.keys()]).to.include.members(["fencekeeper/v1/store.proto", "fencekeeper/v1/errors.proto", "google/protobuf/duration.proto", "google/rpc/status.proto", "grpc/health/v1/health.proto"]);
    for (const file of files.values()) {
      const comments = file.sourceCodeInfo?.location.filter((l) => l.leadingComments.trim() !== "") ?? [];
      expect(comments.length, `${file.name} has comments`).to.be.greaterThan(2);
    }
  });

  it("with --reflection off, buf curl cannot list anything", async () => {
    const run = await bufCurl([...GRPC, "--list-methods", without.url]);
    expect(run.code).to.not.equal(0);
    expect(run.stderr).to.match(/unimplemented/i);
  });
});
