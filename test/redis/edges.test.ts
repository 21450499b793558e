// The Redis recipe at its edges (docs/redis.md), on one real redis-server and on a real three-master Redis
// Cluster. Tokens are made here by hand: what is under test is the script's check, which sees only the
// resource and the generation.
import { expect } from "chai";
import { generateKeyPairSync, sign } from "node:crypto";
import { Cluster, Redis } from "ioredis";
import { canonicalToken, type Token, type TokenKey } from "../../client/index.js";
import { fenceKey, fencedDel, fencedHset, fencedMulti, fencedSet, redisFenceStore, resourceTag } from "../../client/redis.js";
import { startRedis, startRedisCluster, type TestRedis } from "../harness/redis.js";

const tok = (resource: string, generation: number | bigint): Token => ({ resource, generation: BigInt(generation), leaseId: 1n });

for (const kind of ["one server", "a Cluster of three masters"] as const) {
  describe(`Redis fencing at its edges, on ${kind}`, () => {
    let server: TestRedis;
    let redis: Redis | Cluster;
    let n = 0;
    let r: string; // a fresh resource for each test
    const k = (name: string) => `${name}:${resourceTag(r)}`;
    const fence = async () => redis.get(fenceKey(r));

    before(async function () {
      this.timeout(60_000);
      if (kind === "one server") {
        server = await startRedis();
        redis = new Redis({ host: server.host, port: server.ports[0], maxRetriesPerRequest: 1 });
      } else {
        server = await startRedisCluster();
        redis = new Cluster(server.ports.map((port) => ({ host: server.host, port })), { redisOptions: { maxRetriesPerRequest: 1 } });
      }
    });
    after(async function () {
      this.timeout(30_000);
      await redis?.quit();
      await server?.destroy();
    });
    beforeEach(() => {
      r = `res-${++n}`;
    });

    it("a SET applies at the fence's generation or a newer one (the same holder writes twice), an older one is stale and writes nothing", async () => {
      expect(await fencedSet(redis, { key: k("a"), value: "v1", unverified: true, token: tok(r, 5) })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await fencedSet(redis, { key: k("a"), value: "v2", unverified: true, token: tok(r, 5) })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await fencedSet(redis, { key: k("a"), value: "v3", unverified: true, token: tok(r, 9) })).to.deep.equal({ status: "applied", fence: 9n });
      expect(await fencedSet(redis, { key: k("a"), value: "old", unverified: true, token: tok(r, 8) })).to.deep.equal({ status: "stale", fence: 9n });
      // The fence is the resource's: a key the newer generation never wrote is refused to the older one too.
      expect(await fencedSet(redis, { key: k("b"), value: "old", unverified: true, token: tok(r, 8) })).to.deep.equal({ status: "stale", fence: 9n });
      expect(await redis.get(k("a"))).to.equal("v3");
      expect(await redis.exists(k("b"))).to.equal(0);
      expect(await fence()).to.equal("9");
    });

    it("generations are compared as int64, not as Lua's doubles nor as strings", async () => {
      // "10" < "9" as strings; 2^53 and 2^53+1 are one double.
      expect(await fencedSet(redis, { key: k("a"), value: "9", unverified: true, token: tok(r, 9) })).to.deep.equal({ status: "applied", fence: 9n });
      expect(await fencedSet(redis, { key: k("a"), value: "10", unverified: true, token: tok(r, 10) })).to.deep.equal({ status: "applied", fence: 10n });
      expect(await fencedSet(redis, { key: k("a"), value: "9", unverified: true, token: tok(r, 9) })).to.deep.equal({ status: "stale", fence: 10n });
      const big = 2n ** 53n + 1n;
      expect(await fencedSet(redis, { key: k("a"), value: "big", unverified: true, token: tok(r, big) })).to.deep.equal({ status: "applied", fence: big });
      expect(await fencedSet(redis, { key: k("a"), value: "less", unverified: true, token: tok(r, big - 1n) })).to.deep.equal({ status: "stale", fence: big });
      const max = 2n ** 63n - 1n;
      expect(await fencedSet(redis, { key: k("a"), value: "max", unverified: true, token: tok(r, max) })).to.deep.equal({ status: "applied", fence: max });
      expect(await redis.get(k("a"))).to.equal("max");
      let thrown: unknown;
      await fencedSet(redis, { key: k("a"), value: "x", unverified: true, token: tok(r, 2n ** 63n) }).catch((e) => (thrown = e));
      expect(thrown).to.be.instanceOf(RangeError);
    });

    it("each resource has its own fence: a generation of one is never compared with another's", async () => {
      const other = `${r}-other`;
      expect(await fencedSet(redis, { key: k("a"), value: "r", unverified: true, token: tok(r, 100) })).to.deep.equal({ status: "applied", fence: 100n });
      expect(await fencedSet(redis, { key: `x:${resourceTag(other)}`, value: "o", unverified: true, token: tok(other, 5) })).to.deep.equal({ status: "applied", fence: 5n });
      // A key tagged with another resource is that resource's: refused before any command, whatever the generation.
      expect(await fencedSet(redis, { key: `x:${resourceTag(other)}`, value: "no", unverified: true, token: tok(r, 1000) })).to.deep.equal({ status: "otherResource", resource: other });
      expect(await redis.get(`x:${resourceTag(other)}`)).to.equal("o");
      expect(await redis.get(fenceKey(other))).to.equal("5");
      // Redis hashes "a}b" and "a}c" by their common "a": the same slot, but not the same resource.
      const [ab, ac] = [`${r}}b`, `${r}}c`];
      expect(await fencedSet(redis, { key: `x:${resourceTag(ac)}`, value: "c", unverified: true, token: tok(ac, 5) })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await fencedSet(redis, { key: `x:${resourceTag(ac)}`, value: "b", unverified: true, token: tok(ab, 9) })).to.deep.equal({ status: "otherResource", resource: r });
      expect(await fencedSet(redis, { key: `y:${resourceTag(ab)}`, value: "b", unverified: true, token: tok(ab, 9) })).to.deep.equal({ status: "applied", fence: 9n });
      expect(await redis.get(`x:${resourceTag(ac)}`)).to.equal("c");
    });

    it("a key without the resource's hash tag, or the fence key itself, is refused before any command", async () => {
      for (const key of ["plain", "a:{}:b", fenceKey(r)]) {
        let thrown: unknown;
        await fencedSet(redis, { key, value: "x", unverified: true, token: tok(r, 5) }).catch((e) => (thrown = e));
        expect(thrown, key).to.be.instanceOf(RangeError);
      }
      expect(await fence()).to.equal(null);
    });

    it("a DEL keeps the fence: a stale holder cannot write the key back; a missing key is notFound, told from stale", async () => {
      await fencedSet(redis, { key: k("a"), value: "v1", unverified: true, token: tok(r, 5) });
      expect(await fencedDel(redis, { key: k("a"), unverified: true, token: tok(r, 7) })).to.deep.equal({ status: "applied", fence: 7n });
      expect(await redis.exists(k("a"))).to.equal(0);
      expect(await fencedSet(redis, { key: k("a"), value: "back", unverified: true, token: tok(r, 6) })).to.deep.equal({ status: "stale", fence: 7n });
      expect(await fencedDel(redis, { key: k("a"), unverified: true, token: tok(r, 6) })).to.deep.equal({ status: "stale", fence: 7n });
      expect(await fencedDel(redis, { key: k("a"), unverified: true, token: tok(r, 7) })).to.deep.equal({ status: "notFound" });
      expect(await redis.exists(k("a"))).to.equal(0);
      expect(await fence()).to.equal("7");
    });

    it("SET ifExists, ifMissing and px", async () => {
      expect(await fencedSet(redis, { key: k("a"), value: "x", when: "ifExists", unverified: true, token: tok(r, 5) })).to.deep.equal({ status: "notFound" });
      expect(await fencedSet(redis, { key: k("a"), value: "v1", when: "ifMissing", unverified: true, token: tok(r, 5) })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await fencedSet(redis, { key: k("a"), value: "v2", when: "ifMissing", unverified: true, token: tok(r, 6) })).to.deep.equal({ status: "exists", fence: 5n });
      expect(await fencedSet(redis, { key: k("a"), value: "v3", when: "ifExists", px: 60_000, unverified: true, token: tok(r, 6) })).to.deep.equal({ status: "applied", fence: 6n });
      expect(await redis.get(k("a"))).to.equal("v3");
      const pttl = await redis.pttl(k("a"));
      expect(pttl).to.be.within(1, 60_000);
      expect(await redis.pttl(fenceKey(r))).to.equal(-1); // the fence key never expires
      // notFound and exists write nothing and leave the fence where it was.
      expect(await fencedSet(redis, { key: k("b"), value: "x", when: "ifExists", unverified: true, token: tok(r, 8) })).to.deep.equal({ status: "notFound" });
      expect(await fence()).to.equal("6");
    });

    it("HSET applies or is stale; over a key of another type it fails and writes nothing, not even the fence", async () => {
      expect(await fencedHset(redis, { key: k("h"), fields: { a: "1", b: 2 }, unverified: true, token: tok(r, 5) })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await fencedHset(redis, { key: k("h"), fields: { a: "old" }, unverified: true, token: tok(r, 4) })).to.deep.equal({ status: "stale", fence: 5n });
      expect(await redis.hgetall(k("h"))).to.deep.equal({ a: "1", b: "2" });
      await redis.set(k("s"), "a string");
      let thrown: unknown;
      await fencedHset(redis, { key: k("s"), fields: { a: "1" }, unverified: true, token: tok(r, 9) }).catch((e) => (thrown = e));
      expect(String(thrown)).to.include("WRONGTYPE");
      expect(await fence()).to.equal("5");
    });

    it("a multi-key write applies all its ops or none", async () => {
      const ops = [{ set: k("a"), value: "A", px: 60_000 }, { hset: k("h"), fields: { f: "F" } }, { del: k("gone") }, { set: k("a"), value: "A2" }] as const;
      await redis.set(k("gone"), "x");
      expect(await fencedMulti(redis, { ops, unverified: true, token: tok(r, 5) })).to.deep.equal({ status: "applied", fence: 5n });
      expect([await redis.get(k("a")), await redis.hget(k("h"), "f"), await redis.exists(k("gone"))]).to.deep.equal(["A2", "F", 0]);
      expect(await redis.pttl(k("a"))).to.equal(-1); // the second SET of the key, without px, applied after the first
      const stale = [{ set: k("a"), value: "stale" }, { del: k("h") }] as const;
      expect(await fencedMulti(redis, { ops: stale, unverified: true, token: tok(r, 4) })).to.deep.equal({ status: "stale", fence: 5n });
      expect([await redis.get(k("a")), await redis.exists(k("h"))]).to.deep.equal(["A2", 1]);
      // An HSET over a string is found before the first write: the SET before it does not apply either.
      let thrown: unknown;
      await fencedMulti(redis, { ops: [{ set: k("a"), value: "half" }, { hset: k("a"), fields: { f: "x" } }], unverified: true, token: tok(r, 6) }).catch((e) => (thrown = e));
      expect(String(thrown)).to.include("WRONGTYPE");
      expect([await redis.get(k("a")), await fence()]).to.deep.equal(["A2", "5"]);
    });

    it("after SCRIPT FLUSH (a restart, a failover) the scripts are sent again by themselves (EVALSHA, then EVAL)", async () => {
      expect(await fencedSet(redis, { key: k("a"), value: "v1", unverified: true, token: tok(r, 5) })).to.deep.equal({ status: "applied", fence: 5n });
      if (redis instanceof Cluster) await Promise.all(redis.nodes("master").map((node) => node.script("FLUSH")));
      else await redis.script("FLUSH");
      expect(await fencedSet(redis, { key: k("a"), value: "v2", unverified: true, token: tok(r, 6) })).to.deep.equal({ status: "applied", fence: 6n });
    });

    it("the fence store admits a generation at or above the fence and raises it; the fenced writes then see that fence", async () => {
      const store = redisFenceStore(redis);
      expect(await store.admit(r, 5n)).to.deep.equal({ status: "admitted", fence: 5n });
      expect(await store.admit(r, 5n)).to.deep.equal({ status: "admitted", fence: 5n });
      expect(await store.admit(r, 7n)).to.deep.equal({ status: "admitted", fence: 7n });
      expect(await store.admit(r, 6n)).to.deep.equal({ status: "stale", fence: 7n });
      expect(await store.admit(`${r}-other`, 1n)).to.deep.equal({ status: "admitted", fence: 1n });
      expect(await fencedSet(redis, { key: k("a"), value: "x", unverified: true, token: tok(r, 6) })).to.deep.equal({ status: "stale", fence: 7n });
      let thrown: unknown;
      await store.admit(r, 0n).catch((e) => (thrown = e));
      expect(thrown).to.be.instanceOf(RangeError);
    });

    it("a fence key holding something else than a generation is an error, not a fence", async () => {
      await redis.set(fenceKey(r), "0099");
      let thrown: unknown;
      await fencedSet(redis, { key: k("a"), value: "x", unverified: true, token: tok(r, 5) }).catch((e) => (thrown = e));
      expect(String(thrown)).to.include("does not hold a generation");
      expect(await redis.exists(k("a"))).to.equal(0);
    });

    it("a token is checked: keys or unverified: true required, the signature verified, a shared token refused", async () => {
      const { publicKey, privateKey } = generateKeyPairSync("ed25519");
      const keys: TokenKey[] = [{ keyId: "k1", publicKey: Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url") }];
      const signed = (t: Token): Token => ({ ...t, keyId: "k1", signature: sign(null, canonicalToken({ ...t, keyId: "k1" }), privateKey) });
      const good = signed(tok(r, 5));
      expect(await fencedSet(redis, { key: k("a"), value: "v1", token: good, keys })).to.deep.equal({ status: "applied", fence: 5n });
      expect(await fencedSet(redis, { key: k("a"), value: "forged", token: { ...good, generation: 1000n }, keys })).to.deep.equal({ status: "unverified", reason: "bad signature" });
      expect(await fencedDel(redis, { key: k("a"), token: tok(r, 9), keys })).to.deep.equal({ status: "unverified", reason: "not signed" });
      const thrown = await fencedHset(redis, { key: k("h"), fields: { a: "1" }, token: tok(r, 9) } as never).then(() => undefined, (e: unknown) => e);
      expect(thrown).to.be.instanceOf(TypeError);
      expect(String(thrown)).to.include("keys").and.include("unverified: true");
      const shared = await fencedSet(redis, { key: k("a"), value: "s", token: { ...tok(r, 9), shared: true }, unverified: true }).then(() => undefined, (e: unknown) => e);
      expect(shared).to.be.instanceOf(RangeError);
      expect([await redis.get(k("a")), await fence()]).to.deep.equal(["v1", "5"]);
    });
  });
}
