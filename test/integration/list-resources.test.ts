// ListResources: the resources in use (held exclusively or shared, waited for, serving a lock-delay),
// in name order, by prefix, a page at a time, each as Describe describes it; never one that is free;
// with a policy, only those the caller may observe. Against a real server process with JWT
// authentication and a policy, on a real etcd.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { AcquireMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { AUDIENCE, ISSUER, issuerKeys, sign } from "../harness/jwt-fixtures.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("ListResources", function () {
  this.timeout(60_000);
  let dir: string;
  let etcd: TestEtcd;
  let server: TestServer;
  let alice: Client<typeof LeaseService>;
  let sam: Client<typeof LeaseService>;
  let samBearer: Interceptor;

  const clientAs = (token: string) => {
    const bearer: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${token}`);
      return next(req);
    };
    return createClient(LeaseService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer] }));
  };

  /** Every page, following the tokens; the names in order. */
  async function listAll(c: Client<typeof LeaseService>, prefix = "", pageSize = 0): Promise<string[]> {
    const names: string[] = [];
    let pageToken = "";
    for (let pages = 0; pages < 100; pages++) {
      const page = await c.listResources({ prefix, pageSize, pageToken });
      if (pageSize) expect(page.resources.length).to.be.at.most(pageSize);
      names.push(...page.resources.map((r) => r.resource));
      pageToken = page.nextPageToken;
      if (!pageToken) return names;
    }
    throw new Error("more than 100 pages");
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-list-"));
    const keys = await issuerKeys(dir);
    const policy = join(dir, "policy.json");
    writeFileSync(
      policy,
      JSON.stringify({
        version: 1,
        rules: [
          { principals: ["alice"], verbs: ["acquire", "observe"], resources: ["a/*"] },
          { principals: ["alice"], verbs: ["acquire"], resources: ["b/*"] },
          { groups: ["sre"], verbs: ["admin"], resources: ["*"] },
        ],
      }),
    );
    etcd = await startEtcd();
    server = await startServer({
      etcd: etcd.endpoint,
      args: ["--jwt-keys", keys.pemFile, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--policy", policy, "--max-lock-delay", "60"],
    });
    alice = clientAs(await sign(keys.es256.privateKey, { sub: "alice" }));
    const samToken = await sign(keys.es256.privateKey, { sub: "sam", groups: ["sre"] });
    sam = clientAs(samToken);
    samBearer = (next) => (req) => {
      req.header.set("authorization", `Bearer ${samToken}`);
      return next(req);
    };
  });

  after(async () => {
    await server?.stop();
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists what is held, shared, waited for or serving a lock-delay, in name order, described; never what is free", async () => {
    const held = await alice.acquire({ resource: "a/held", ttl: ttl(30), holder: "one" });
    await alice.acquire({ resource: "a/shared", ttl: ttl(30), holder: "s1", mode: AcquireMode.SHARED });
    await alice.acquire({ resource: "a/shared", ttl: ttl(30), holder: "s2", mode: AcquireMode.SHARED });
    const freed = await alice.acquire({ resource: "a/free", ttl: ttl(30), holder: "gone" });
    await alice.release({ token: freed.token });
    // A waiter: the holder of a/waited holds it on, and a second Acquire waits in line.
    await alice.acquire({ resource: "a/waited", ttl: ttl(30), holder: "first" });
    const waiting = new AbortController();
    const waiter = alice.acquire({ resource: "a/waited", ttl: ttl(30), holder: "second", wait: true }, { signal: waiting.signal }).catch(() => undefined);
    // A lock-delay: its holder's lease ends without a release.
    await alice.acquire({ resource: "a/delayed", ttl: ttl(2), holder: "lost", lockDelay: ttl(30) });
    await eventually(async () => (await sam.describe({ resource: "a/waited" })).waiters === 1, "the second Acquire waits in line");
    await eventually(async () => (await sam.describe({ resource: "a/delayed" })).lockDelayUntil !== undefined, "a/delayed serves its lock-delay", 10_000);

    const page = await sam.listResources({ prefix: "a/" });
    expect(page.resources.map((r) => r.resource)).to.deep.equal(["a/delayed", "a/held", "a/shared", "a/waited"]);
    expect(page.nextPageToken).to.equal("");
    const byName = new Map(page.resources.map((r) => [r.resource, r.state!]));
    expect(byName.get("a/held")!.holder).to.equal("one");
    expect(byName.get("a/held")!.token!.generation).to.equal(held.token!.generation);
    expect(byName.get("a/shared")!.holders.map((h) => h.holder).sort()).to.deep.equal(["s1", "s2"]);
    expect(byName.get("a/waited")!.waiters).to.equal(1);
    expect(byName.get("a/delayed")!.held).to.equal(false);
    expect(byName.get("a/delayed")!.lockDelayUntil).to.not.equal(undefined);
    waiting.abort();
    await waiter;
  });

  it("goes page by page with next_page_token, every resource once, in order", async () => {
    const names = ["p/1", "p/2", "p/3", "p/4", "p/5"];
    for (const resource of names) await sam.acquire({ resource, ttl: ttl(30), holder: "pager" });
    expect(await listAll(sam, "p/", 2)).to.deep.equal(names);
    expect(await listAll(sam, "p/", 1)).to.deep.equal(names);
    expect(await listAll(sam, "p/")).to.deep.equal(names);
  });

  it("reads names, not store entries: a resource with more store entries than one read of the scan holds is listed while held, and never once free", async () => {
    // 600 entries: more keys than one read of the scan takes, all sorted before the resource's holders.
    const store = createClient(FencedStoreService, createGrpcTransport({ baseUrl: server.url, interceptors: [samBearer] }));
    const fill = async (resource: string) => {
      const { token } = await sam.acquire({ resource, ttl: ttl(60), holder: "filler" });
      for (let i = 0; i < 600; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => store.put({ resource, key: `k${i + j}`, value: new Uint8Array([1]), mutation: { token } })));
      }
      return token!;
    };
    const held = await fill("m/big-held");
    await sam.release({ token: await fill("m/big-free") });
    await sam.acquire({ resource: "m/c", ttl: ttl(60), holder: "after" });
    await sam.acquire({ resource: "m/a", ttl: ttl(60), holder: "before" });
    expect(await listAll(sam, "m/")).to.deep.equal(["m/a", "m/big-held", "m/c"]);
    expect(await listAll(sam, "m/", 1)).to.deep.equal(["m/a", "m/big-held", "m/c"]);
    await sam.release({ token: held });
    expect(await listAll(sam, "m/")).to.deep.equal(["m/a", "m/c"]);
  });

  it("with a policy, lists only the resources the caller may observe, refusing nothing", async () => {
    await alice.acquire({ resource: "b/mine", ttl: ttl(30), holder: "hidden" });
    const all = await listAll(sam);
    expect(all).to.include("b/mine");
    const hers = await listAll(alice);
    expect(hers).to.not.include("b/mine");
    expect(hers.length).to.be.greaterThan(0);
    expect(hers.every((r) => r.startsWith("a/")), hers.join(", ")).to.equal(true);
  });

  it("refuses a page size out of range, a page token it did not give for this prefix, and a prefix that cannot start a name, with INVALID_ARGUMENT", async () => {
    const refusals: [Parameters<typeof sam.listResources>[0], RegExp][] = [
      [{ pageSize: -1 }, /page_size is -1; give 1 to 1000/],
      [{ pageSize: 1001 }, /page_size is 1001/],
      [{ prefix: "p/", pageToken: "bm90LWEtdG9rZW4" }, /page_token is not one that ListResources gave/],
      [{ prefix: "bad\u0007" }, /prefix contains the control character/],
    ];
    // A token of another prefix's listing is refused too.
    const other = await sam.listResources({ prefix: "p/", pageSize: 1 });
    refusals.push([{ prefix: "a/", pageToken: other.nextPageToken }, /page_token is not one that ListResources gave/]);
    for (const [req, message] of refusals) {
      const err = await sam.listResources(req).then(
        () => undefined,
        (e) => ConnectError.from(e),
      );
      expect(err, JSON.stringify(req)).to.be.instanceOf(ConnectError);
      expect(err!.code, JSON.stringify(req)).to.equal(Code.InvalidArgument);
      expect(err!.rawMessage).to.match(message);
    }
  });
});
