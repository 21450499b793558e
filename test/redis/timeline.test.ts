// The article's timeline against a real redis-server: holder A, paused past its TTL, comes back and writes
// the keys that B, granted after A's lease ran out, has written since. Every fenced write of A is "stale"
// with B's generation as the fence, and B's data stays. Then two writers of two generations racing on one
// key, watched by a reader: once the newer one's data is there, the older one's never comes back. Then a
// forged token, refused before any command reaches Redis, as Redis's own command counters show.
import { expect } from "chai";
import { Redis } from "ioredis";
import { FencekeeperClient, type Token } from "../../client/index.js";
import { fenceKey, fencedDel, fencedHset, fencedMulti, fencedSet, resourceTag, type RedisFencedOutcome } from "../../client/redis.js";
import { ProcessClient } from "../harness/process-client.js";
import { startRedis, type TestRedis } from "../harness/redis.js";
import { useServer, uniqueResource } from "../harness/suite.js";

const HOLDER = "test/redis/redis-holder.ts";

describe("Redis: a paused holder's stale writes, racing generations, forged tokens", () => {
  const s = useServer();
  let server: TestRedis;
  const conns: Redis[] = [];
  const connect = () => {
    const c = new Redis({ host: server.host, port: server.ports[0], maxRetriesPerRequest: 1 });
    conns.push(c);
    return c;
  };
  let fk: FencekeeperClient;
  const procs: ProcessClient[] = [];
  const holder = () => {
    const p = new ProcessClient(HOLDER, [s.server.url, String(server.ports[0])]);
    procs.push(p);
    return p;
  };

  before(async function () {
    this.timeout(60_000);
    server = await startRedis();
    fk = new FencekeeperClient({ servers: s.server.url });
  });
  after(async function () {
    this.timeout(30_000);
    await Promise.all(conns.map((c) => c.quit()));
    await fk?.close();
    await server?.destroy();
  });
  afterEach(() => procs.splice(0).forEach((p) => p.kill()));

  it("A paused past its TTL writes nothing once B has written: SET, DEL, HSET and a multi-key write are all stale, and B's data stays", async () => {
    const resource = uniqueResource("orders");
    const key = `order:${resourceTag(resource)}:1`;
    const a = holder();
    const b = holder();

    const tokenA = (await a.send(`acquire ${resource} 2000`)).token;
    expect(await a.send(`set ${key} from-A`)).to.deep.equal({ status: "applied", fence: tokenA.generation });

    a.pause(); // a scheduler pause, a stalled runtime: A does not know, and stops renewing
    // B waits in line and is granted once A's lease has run out on the server.
    const tokenB = (await b.send(`acquire ${resource} 10000`, 30_000)).token;
    expect(BigInt(tokenB.generation) > BigInt(tokenA.generation)).to.equal(true);
    expect(await b.send(`set ${key} from-B`)).to.deep.equal({ status: "applied", fence: tokenB.generation });
    expect(await b.send(`hset ${key}:h f from-B`)).to.deep.equal({ status: "applied", fence: tokenB.generation });

    a.resume();
    expect(await a.send("held")).to.deep.equal({ held: false }); // its SDK knows, but A writes anyway
    const stale = { status: "stale", fence: tokenB.generation };
    expect(await a.send(`set ${key} from-A-stale`)).to.deep.equal(stale);
    expect(await a.send(`hset ${key}:h f from-A-stale`)).to.deep.equal(stale);
    expect(await a.send(`multi ${key} from-A-stale`)).to.deep.equal(stale);
    expect(await a.send(`del ${key}`)).to.deep.equal(stale);
    // A key B never wrote is refused too: the fence is the resource's, not the key's.
    expect(await a.send(`set order:${resourceTag(resource)}:2 from-A-stale`)).to.deep.equal(stale);

    const redis = connect();
    expect(await redis.get(key)).to.equal("from-B");
    expect(await redis.hgetall(`${key}:h`)).to.deep.equal({ f: "from-B" });
    expect(await redis.exists(`order:${resourceTag(resource)}:2`)).to.equal(0);
    expect(await redis.get(fenceKey(resource))).to.equal(tokenB.generation);
  });

  it("two writers of two generations racing on one key: once the newer one's data is there, the older one's never comes back", async function () {
    this.timeout(30_000);
    const resource = uniqueResource("race");
    const key = `doc:${resourceTag(resource)}`;
    const older = await fk.acquire(resource, { ttl: 10_000 });
    const tokenOld: Token = older.token;
    await older.release();
    const newer = await fk.acquire(resource, { ttl: 10_000 });
    const tokenNew: Token = newer.token;
    expect(tokenNew.generation > tokenOld.generation).to.equal(true);
    const keys = await fk.tokenKeys();

    const [wOld, wNew, reader] = [connect(), connect(), connect()];
    const WRITES = 300;
    const outcomes: Record<"old" | "new", RedisFencedOutcome[]> = { old: [], new: [] };
    const seen: string[] = [];
    let done = 0;
    const writer = async (name: "old" | "new", redis: Redis, token: Token) => {
      for (let i = 0; i < WRITES; i++) outcomes[name].push(await fencedSet(redis, { key, value: `${name}:${i}`, token, keys }));
      done++;
    };
    const read = async () => {
      while (done < 2) {
        const v = await reader.get(key);
        if (v !== null && v !== seen.at(-1)) seen.push(v);
      }
    };
    const oldWriting = writer("old", wOld, tokenOld);
    const reading = read();
    // The newer writer starts once the older one has written a little, so that the two interleave.
    while (outcomes.old.length < 20) await new Promise((r) => setImmediate(r));
    await Promise.all([oldWriting, writer("new", wNew, tokenNew), reading]);
    await newer.release();

    const firstNew = seen.findIndex((v) => v.startsWith("new:"));
    expect(firstNew).to.be.greaterThan(0);
    expect(seen.slice(firstNew).filter((v) => v.startsWith("old:")), "older data seen after the newer's").to.deep.equal([]);
    expect(outcomes.new.every((o) => o.status === "applied")).to.equal(true);
    // The older writer: applied until the newer one's first write, stale from then on, never applied again.
    const statuses = outcomes.old.map((o) => o.status).join(" ");
    expect(statuses).to.match(/^(applied ?)+(stale ?)+$/);
    expect(outcomes.old.at(-1)).to.deep.equal({ status: "stale", fence: tokenNew.generation });
    expect(await reader.get(key)).to.equal(`new:${WRITES - 1}`);
  });

  it("a forged token is refused before any command reaches Redis (its own command counters say so)", async () => {
    const resource = uniqueResource("forged");
    const key = `doc:${resourceTag(resource)}`;
    const lease = await fk.acquire(resource, { ttl: 10_000 });
    const keys = await fk.tokenKeys();
    const genuine = lease.token;
    const [writer, admin] = [connect(), connect()];
    await writer.ping(); // connected and ready: nothing more of the connection's own goes to Redis after this

    await admin.config("RESETSTAT");
    const poison = 2n ** 63n - 1n;
    const forged: Token[] = [
      { ...genuine, generation: poison }, // a generation raised by hand: the signature no longer covers it
      { ...genuine, generation: poison, signature: undefined, keyId: undefined }, // unsigned
      { ...genuine, generation: poison, keyId: "made-up" }, // a key the server never had
    ];
    for (const token of forged) {
      const outcomes = [
        await fencedSet(writer, { key, value: "poison", token, keys }),
        await fencedDel(writer, { key, token, keys }),
        await fencedHset(writer, { key: `${key}:h`, fields: { f: "poison" }, token, keys }),
        await fencedMulti(writer, { ops: [{ set: key, value: "poison" }], token, keys }),
      ];
      for (const o of outcomes) expect(o.status).to.equal("unverified");
    }
    // Without keys nor unverified: true the helper throws before any command.
    const thrown = await fencedSet(writer, { key, value: "poison", token: forged[0] } as never).then(() => undefined, (e: unknown) => e);
    expect(thrown).to.be.instanceOf(TypeError);

    const commands = async () =>
      (await admin.info("commandstats"))
        .split("\n")
        .filter((l) => l.startsWith("cmdstat_"))
        .map((l) => l.slice("cmdstat_".length, l.indexOf(":")))
        // The admin's own (Redis 7 names a subcommand: "config|resetstat").
        .filter((c) => !c.startsWith("config") && c !== "info");
    // No EVALSHA, EVAL, SET, GET: nothing from the writer.
    expect(await commands()).to.deep.equal([]);
    expect(await admin.exists(key, `${key}:h`, fenceKey(resource))).to.equal(0);

    // The counters do see the writer: the genuine token's write runs its script (EVAL, or EVALSHA once
    // the connection has sent it), and the script's own SET.
    expect(await fencedSet(writer, { key, value: "real", token: genuine, keys })).to.deep.equal({ status: "applied", fence: genuine.generation });
    expect((await commands()).filter((c) => c.startsWith("eval"))).to.have.length.greaterThan(0);
    await lease.release();
  });
});
