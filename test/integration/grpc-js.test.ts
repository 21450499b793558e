// An independent gRPC implementation (@grpc/grpc-js, proto files loaded at run time) against the server.
import { expect } from "chai";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fromBinary } from "@bufbuild/protobuf";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/ts/google/rpc/status_pb.js";
import { useServer, uniqueResource } from "../harness/suite.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function loadServices() {
  const def = protoLoader.loadSync(["fencekeeper/v1/lease.proto", "fencekeeper/v1/store.proto"], {
    includeDirs: [`${ROOT}/proto`, `${ROOT}/third_party/proto`],
    longs: String,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as any;
  return pkg.fencekeeper.v1;
}

const call = <T>(client: any, method: string, req: unknown) =>
  new Promise<T>((resolve, reject) => client[method](req, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res))));

describe("a @grpc/grpc-js client", () => {
  const s = useServer();

  it("acquires, writes, reads, and sees a stale write refused with ErrorInfo in the status details", async () => {
    const v1 = loadServices();
    const address = s.server.url.replace("http://", "");
    const lease = new v1.LeaseService(address, grpc.credentials.createInsecure());
    const store = new v1.FencedStoreService(address, grpc.credentials.createInsecure());
    try {
      const resource = uniqueResource("grpc-js");
      const first = await call<any>(lease, "Acquire", { resource, ttl: { seconds: 5 }, holder: "grpc-js" });
      expect(first.token.resource).to.equal(resource);
      await call(store, "Put", { resource, key: "k", value: Buffer.from("one"), mutation: { token: first.token } });
      const got = await call<any>(store, "Get", { resource, key: "k" });
      expect(got.value.toString()).to.equal("one");

      await call(lease, "Release", { token: first.token });
      const second = await call<any>(lease, "Acquire", { resource, ttl: { seconds: 5 }, holder: "grpc-js-2" });
      expect(BigInt(second.token.generation) > BigInt(first.token.generation)).to.equal(true);
      await call(store, "Put", { resource, key: "k", value: Buffer.from("two"), mutation: { token: second.token } });

      const err = await call(store, "Put", { resource, key: "k", value: Buffer.from("stale"), mutation: { token: first.token } }).catch(
        (e: grpc.ServiceError) => e,
      );
      const e = err as grpc.ServiceError;
      expect(e.code).to.equal(grpc.status.FAILED_PRECONDITION);
      const [details] = e.metadata.get("grpc-status-details-bin") as Buffer[];
      const status = fromBinary(StatusSchema, details);
      const info = status.details.find((d) => d.typeUrl === "type.googleapis.com/google.rpc.ErrorInfo")!;
      expect(fromBinary(ErrorInfoSchema, info.value).reason).to.equal("STALE_TOKEN");
      expect((await call<any>(store, "Get", { resource, key: "k" })).value.toString()).to.equal("two");
    } finally {
      lease.close();
      store.close();
    }
  });
});
