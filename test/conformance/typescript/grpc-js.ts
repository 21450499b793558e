// The Api of api.ts with @grpc/grpc-js. grpc-js takes a service definition of paths and serializers;
// this one is made from the service descriptors that protoc-gen-es generated, with @bufbuild/protobuf
// doing the binary encoding, so no proto file is loaded at run time.
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { ErrorInfoSchema } from "../../../gen/ts/google/rpc/error_details_pb.js";
import { LeaseService } from "../../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../../gen/ts/fencekeeper/v1/store_pb.js";
import { StatusSchema } from "../../../gen/ts/google/rpc/status_pb.js";
import { endpoint, type Api, type Auth, type Failure, type Library } from "./api.js";

function definition(service: DescService): grpc.ServiceDefinition {
  const methods: Record<string, grpc.MethodDefinition<MessageInitShape<DescMessage>, MessageInitShape<DescMessage>>> = {};
  for (const m of service.methods) {
    methods[m.localName] = {
      path: `/${service.typeName}/${m.name}`,
      requestStream: m.methodKind === "client_streaming" || m.methodKind === "bidi_streaming",
      responseStream: m.methodKind === "server_streaming" || m.methodKind === "bidi_streaming",
      requestSerialize: (msg) => Buffer.from(toBinary(m.input, create(m.input, msg))),
      requestDeserialize: (bytes: Buffer) => fromBinary(m.input, bytes),
      responseSerialize: (msg) => Buffer.from(toBinary(m.output, create(m.output, msg))),
      responseDeserialize: (bytes: Buffer) => fromBinary(m.output, bytes),
    };
  }
  return methods;
}

const LeaseClient = grpc.makeGenericClientConstructor(definition(LeaseService), LeaseService.typeName);
const StoreClient = grpc.makeGenericClientConstructor(definition(FencedStoreService), FencedStoreService.typeName);

// A generic client's methods are named after the definition's keys and typed loosely.
type Generic = grpc.Client & Record<string, (...args: any[]) => any>;

function unary<Res>(client: Generic, method: string, req: unknown): Promise<Res> {
  return new Promise((resolve, reject) =>
    client[method](req, (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res))),
  );
}

export const grpcJsLibrary: Library = {
  name: "grpc-js",

  connect(server: string, auth: Auth = {}): Api {
    const { address, tls } = endpoint(server, auth);
    const credentials = tls ? grpc.credentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null) : grpc.credentials.createInsecure();
    // An interceptor rather than call credentials, which grpc-js refuses to compose with insecure ones: the
    // tests also run a cleartext server on loopback. It sees every call, streams included.
    const bearer: grpc.Interceptor = (options, nextCall) =>
      new grpc.InterceptingCall(nextCall(options), {
        start(metadata, listener, next) {
          metadata.set("authorization", `Bearer ${auth.bearer}`);
          next(metadata, listener);
        },
      });
    const options: grpc.ClientOptions = auth.bearer ? { interceptors: [bearer] } : {};
    const lease = new LeaseClient(address, credentials, options) as unknown as Generic;
    const store = new StoreClient(address, credentials, options) as unknown as Generic;
    return {
      acquire: (req) => unary(lease, "acquire", req),
      renew: (req) => unary(lease, "renew", req),
      release: (req) => unary(lease, "release", req),
      describe: (req) => unary(lease, "describe", req),
      keepAlive(requests) {
        const call: grpc.ClientDuplexStream<unknown, any> = lease.keepAlive();
        void (async () => {
          for await (const req of requests) call.write(req);
          call.end();
        })().catch((e) => call.destroy(e));
        return call;
      },
      observe(req, signal) {
        const call: grpc.ClientReadableStream<any> = lease.observe(req);
        signal.addEventListener("abort", () => call.cancel(), { once: true });
        return call;
      },
      listTokenKeys: () => unary(lease, "listTokenKeys", {}),
      put: (req) => unary(store, "put", req),
      get: (req) => unary(store, "get", req),
      close() {
        lease.close();
        store.close();
      },
    };
  },

  /** The status of a grpc-js ServiceError, and the google.rpc.ErrorInfo in its grpc-status-details-bin trailer. */
  failureOf(error: unknown): Failure | undefined {
    const e = error as Partial<grpc.ServiceError>;
    if (typeof e?.code !== "number" || !e.metadata) return undefined;
    const failure: Failure = { code: grpc.status[e.code], reason: "", domain: "" };
    const [details] = e.metadata.get("grpc-status-details-bin") as Buffer[];
    if (details) {
      for (const detail of fromBinary(StatusSchema, details).details) {
        const info = anyUnpack(detail, ErrorInfoSchema);
        if (info) return { ...failure, reason: info.reason, domain: info.domain };
      }
    }
    return failure;
  },
};
