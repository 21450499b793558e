// The fenced endpoint's connect interceptor on a real connect-node server (HTTP/2, gRPC protocol),
// called through a real connect client: a service of its own that takes writes shaped like
// StoreService.Put, with the token in the fencing-token metadata. Stale: FAILED_PRECONDITION with
// ErrorInfo STALE_TOKEN and the fence; forged: PERMISSION_DENIED before the store is asked.
import { expect } from "chai";
import { createServer, type Http2Server, type Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { FencedStoreService, type PutRequest } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { FencekeeperClient, type Token } from "../../client/index.js";
import { fencedEndpoint, fencingTokenHeader, fencingTokenKey } from "../../client/fenced-http.js";
import type { FenceStore, FenceVerdict } from "../../client/fence-store.js";
import { failure, uniqueResource, useServer } from "../harness/suite.js";

/** Single-process fences, enough for one test server. */
function memoryStore(): FenceStore & { admits: number } {
  const fences = new Map<string, bigint>();
  return {
    admits: 0,
    async admit(resource, generation): Promise<FenceVerdict> {
      this.admits++;
      const fence = fences.get(resource);
      if (fence !== undefined && fence > generation) return { status: "stale", fence };
      fences.set(resource, generation);
      return { status: "admitted", fence: generation };
    },
  };
}

describe("fenced endpoint: the connect interceptor on a connect-node server", () => {
  const s = useServer();
  let client: FencekeeperClient;
  let server: Http2Server;
  const sessions = new Set<Http2Session>();
  const store = memoryStore();
  const items = new Map<string, { value: string; generation: bigint }>();
  let put: (resource: string, token: Token, value: string) => Promise<unknown>;

  before(async () => {
    client = new FencekeeperClient({ servers: s.server.url });
    const fenced = fencedEndpoint({ keys: () => client.tokenKeys(), store });
    const handler = connectNodeAdapter({
      routes: (router) =>
        router.service(FencedStoreService, {
          async put(req, ctx) {
            const token = ctx.values.get(fencingTokenKey)!;
            items.set(req.resource, { value: Buffer.from(req.value).toString(), generation: token.generation });
            return {};
          },
        }),
      interceptors: [fenced.interceptor((req) => (req.method.name === "Put" ? (req.message as PutRequest).resource : undefined))],
    });
    server = createServer(handler);
    server.on("session", (session) => sessions.add(session));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const api = createClient(FencedStoreService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
    put = (resource, token, value) => api.put({ resource, key: "k", value: Buffer.from(value) }, { headers: { "fencing-token": fencingTokenHeader(token) } });
  });
  after(async () => {
    // The clients' HTTP/2 sessions would keep the server open: end them from this side.
    sessions.forEach((session) => session.destroy());
    await new Promise<void>((r) => server?.close(() => r()));
    await client?.close();
  });

  it("admits the current generation, refuses an older one with FAILED_PRECONDITION / STALE_TOKEN and the fence", async () => {
    const resource = uniqueResource("orders");
    const older = await client.acquire(resource, { ttl: 5000 });
    await put(resource, older.token, "older");
    await older.release();
    const newer = await client.acquire(resource, { ttl: 5000 });
    await put(resource, newer.token, "newer");

    const err = await failure(put(resource, older.token, "older-again"));
    expect(err.code).to.equal(Code.FailedPrecondition);
    const info = err.findDetails(ErrorInfoSchema)[0];
    expect(info).to.include({ reason: "STALE_TOKEN", domain: "fencekeeper.io" });
    expect(info.metadata).to.deep.equal({ resource, generation: String(older.token.generation), fence: String(newer.token.generation) });
    expect(items.get(resource)).to.deep.equal({ value: "newer", generation: newer.token.generation });
    await newer.release();
  });

  it("refuses a forged token with PERMISSION_DENIED / TOKEN_SIGNATURE_INVALID before the store is asked", async () => {
    const resource = uniqueResource("orders");
    const lease = await client.acquire(resource, { ttl: 5000 });
    const before = store.admits;
    const err = await failure(put(resource, { ...lease.token, generation: lease.token.generation + 1000n }, "forged"));
    expect(err.code).to.equal(Code.PermissionDenied);
    expect(err.findDetails(ErrorInfoSchema)[0]?.reason).to.equal("TOKEN_SIGNATURE_INVALID");
    expect(store.admits).to.equal(before);
    expect(items.has(resource)).to.equal(false);
    await lease.release();
  });

  it("a call without the header is INVALID_ARGUMENT", async () => {
    const api = createClient(FencedStoreService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
    const err = await failure(api.put({ resource: "orders", key: "k", value: new Uint8Array() }));
    expect(err).to.be.instanceOf(ConnectError);
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(err.rawMessage).to.match(/fencing-token header/);
  });
});
