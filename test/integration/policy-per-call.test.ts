// The policy is decided once per call, in the call pipeline (server/rpc/authorization.ts), not again by
// each handler: the services run in this process on a real etcd with a real policy file and JWT
// authentication, and the test counts how often the policy is asked (Policy.allows) per call.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code, ConnectError, createClient, createRouterTransport, type Client, type Interceptor } from "@connectrpc/connect";
import { pino } from "pino";
import type { Etcd3 } from "etcd3";
import { createApp, type App } from "../../server/app.js";
import { Access, CALLER } from "../../server/auth/access.js";
import { Authenticator } from "../../server/auth/authenticator.js";
import { PolicyFile } from "../../server/auth/policy-file.js";
import type { Policy } from "../../server/auth/policy.js";
import type { Principal } from "../../server/auth/principal.js";
import { connectEtcd } from "../../server/etcd/client.js";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { issuerKeys, jwtConfig } from "../harness/jwt-fixtures.js";
import { uniqueResource } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const principal = (name: string, groups: string[] = []): Principal => ({ name, via: "jwt", groups, claims: {} });
const ALICE = principal("alice");
const SRE = principal("sam", ["sre"]);
const MALLORY = principal("mallory");

describe("the policy is decided once per call", function () {
  this.timeout(60_000);
  let dir: string;
  let etcd: TestEtcd;
  let client: Etcd3;
  let app: App;
  let asked = 0;
  let lease: Client<typeof LeaseService>;
  let store: Client<typeof FencedStoreService>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-policy-per-call-"));
    const keys = await issuerKeys(dir);
    const policyPath = join(dir, "policy.json");
    writeFileSync(
      policyPath,
      JSON.stringify({
        version: 1,
        rules: [
          { principals: ["alice"], verbs: ["acquire", "write", "read"], resources: ["orders/*"] },
          { groups: ["sre"], verbs: ["admin"], resources: ["*"] },
        ],
      }),
    );
    const log = pino({ level: "silent" });
    const file = await PolicyFile.load(policyPath, log);
    // Every question to the policy in force is counted.
    const real = file.current();
    const counting = new Proxy(real, {
      get(target, key, receiver) {
        if (key !== "allows") return Reflect.get(target, key, receiver);
        return (...args: Parameters<Policy["allows"]>) => {
          asked++;
          return target.allows(...args);
        };
      },
    });
    file.current = () => counting;
    const access = new Access(await Authenticator.create({ mtls: false, jwt: jwtConfig([keys.pemFile]) }), file);
    etcd = await startEtcd();
    client = connectEtcd({ endpoints: [etcd.endpoint], callTimeoutMs: 5000 });
    app = createApp({
      etcd: client,
      access,
      callerCaps: { streams: 100, waiters: 100, streamMessagesPerSecond: 1000 },
      prefix: `/policy-per-call-${process.pid}/`,
      etcdLimits: { maxTxnOps: 128, maxRequestBytes: 1536 * 1024 },
      etcdTimeoutMs: 5000,
      log,
    });
    // The caller, as authentication leaves it: named by the test in a header.
    const callers = new Map([ALICE, SRE, MALLORY].map((p) => [p.name, p]));
    const as: Interceptor = (next) => (req) => {
      req.contextValues.set(CALLER, callers.get(req.header.get("x-test-caller") ?? "")!);
      return next(req);
    };
    const transport = createRouterTransport((router) => app.routes(router), { router: { interceptors: [as] } });
    lease = createClient(LeaseService, transport);
    store = createClient(FencedStoreService, transport);
  });
  after(async () => {
    app?.close();
    client?.close();
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const caller = (p: Principal) => ({ headers: { "x-test-caller": p.name } });

  /** How often the policy was asked during f. */
  async function questions(f: () => Promise<unknown>): Promise<number> {
    const before = asked;
    await f();
    return asked - before;
  }

  async function held(resource: string): Promise<FencingToken> {
    return (await lease.acquire({ resource, ttl: ttl(30), holder: "alice-1" }, caller(ALICE))).token!;
  }

  it("a Put by a writer: admin, then write; by an admin: admin alone", async () => {
    const resource = uniqueResource("orders/put");
    const token = await held(resource);
    expect(await questions(() => store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token } }, caller(ALICE)))).to.equal(2);
    // An admin writes under alice's token (no write grant of its own): one question, where the handler
    // asked again whether the caller was an admin.
    expect(await questions(() => store.put({ resource, key: "k", value: Buffer.from("w"), mutation: { token } }, caller(SRE)))).to.equal(1);
  });

  it("a Batch of 8 writes on one resource: one decision, not one per write", async () => {
    const resource = uniqueResource("orders/batch");
    const token = await held(resource);
    const writes = Array.from({ length: 8 }, (_, i) => ({ write: { case: "put" as const, value: { resource, key: `k${i}`, value: Buffer.from("v"), mutation: { token } } } }));
    let results: unknown[] = [];
    expect(await questions(async () => ({ results } = await store.batch({ writes }, caller(ALICE))))).to.equal(2);
    expect(results).to.have.length(8);
  });

  it("a refused Put: PERMISSION_DENIED, naming the verb; a Batch's refused write is refused on its own", async () => {
    const resource = uniqueResource("orders/denied");
    const token = await held(resource);
    const err = await store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token } }, caller(MALLORY)).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).to.equal(Code.PermissionDenied);
    expect(err?.rawMessage).to.match(/may not write/);
    const { results } = await store.batch(
      {
        writes: [
          { write: { case: "put", value: { resource, key: "a", value: Buffer.from("v"), mutation: { token } } } },
          { write: { case: "put", value: { resource: "other/x", key: "b", value: Buffer.from("v"), mutation: { token } } } },
        ],
      },
      caller(ALICE),
    );
    expect(results[0].result.case).to.equal("commit");
    expect(results[1].result.case).to.equal("error");
    expect(results[1].result.case === "error" && results[1].result.value.code).to.equal(Code.PermissionDenied);
  });

  it("an Acquire and a Get: the verb alone", async () => {
    const resource = uniqueResource("orders/read");
    expect(await questions(() => held(resource))).to.equal(1);
    expect(await questions(() => store.get({ resource, key: "k" }, caller(ALICE)))).to.equal(1);
  });
});
