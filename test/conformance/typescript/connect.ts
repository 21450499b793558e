// The Api of api.ts with @connectrpc/connect, over the gRPC protocol (@connectrpc/connect-node).
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { ErrorInfoSchema } from "../../../gen/ts/google/rpc/error_details_pb.js";
import { LeaseService } from "../../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../../gen/ts/fencekeeper/v1/store_pb.js";
import { endpoint, type Api, type Auth, type Failure, type Library } from "./api.js";

export const connectLibrary: Library = {
  name: "connect",

  connect(server: string, auth: Auth = {}): Api {
    const { tls } = endpoint(server, auth);
    // An interceptor sees every call, streams included.
    const bearer: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${auth.bearer}`);
      return next(req);
    };
    // The transport's HTTP/2 connection, made here so that close can end it.
    const sessions = new Http2SessionManager(server, {}, tls);
    const transport = createGrpcTransport({
      baseUrl: server,
      sessionManager: sessions,
      ...(auth.bearer && { interceptors: [bearer] }),
    });
    const lease = createClient(LeaseService, transport);
    const store = createClient(FencedStoreService, transport);
    return {
      acquire: (req) => lease.acquire(req),
      renew: (req) => lease.renew(req),
      release: (req) => lease.release(req),
      describe: (req) => lease.describe(req),
      keepAlive: (requests) => lease.keepAlive(requests),
      observe: (req, signal) => lease.observe(req, { signal }),
      listTokenKeys: () => lease.listTokenKeys({}),
      put: (req) => store.put(req),
      get: (req) => store.get(req),
      // Left idle, the connection would stay open for 15 minutes: a process that makes many clients ends each one.
      close: () => sessions.abort(),
    };
  },

  /** The status of a ConnectError, and the google.rpc.ErrorInfo that Connect decoded from grpc-status-details-bin. */
  failureOf(error: unknown): Failure | undefined {
    if (!(error instanceof ConnectError)) return undefined;
    const [info] = error.findDetails(ErrorInfoSchema);
    // Code names are PascalCase (FailedPrecondition); the canonical names are FAILED_PRECONDITION.
    const code = Code[error.code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
    return { code, reason: info?.reason ?? "", domain: info?.domain ?? "" };
  },
};
