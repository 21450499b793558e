// The article's timeline against each store fencekeeper ships a fencing helper for (PostgreSQL, MariaDB,
// Redis; test/fenced-stores/stores.ts), one suite for all: holder A, paused past its TTL, comes back and
// writes what B, granted after A's lease ran out, has written since, and every write of A is "stale" with
// B's generation as the fence while B's data stays; two generations writing at once, where once the newer
// one's data is there the older one's never comes back; and a forged token, refused before a byte of it
// reaches the store. Each store's own edges are in test/<store>/edges.test.ts.
import { expect } from "chai";
import { FencekeeperClient, type FencedOutcome, type Token } from "../../client/index.js";
import { startDelayProxy } from "../harness/delay-proxy.js";
import { ProcessClient } from "../harness/process-client.js";
import { useServer, uniqueResource } from "../harness/suite.js";
import { connect, type FencedWrites } from "./adapters.js";
import { STORES, type RunningStore } from "./stores.js";

const HOLDER = "test/fenced-stores/holder.ts";

describe("fenced stores: a paused holder's stale writes, racing generations, forged tokens", () => {
  const s = useServer();

  for (const store of STORES) {
    describe(store.title, () => {
      let running: RunningStore;
      let fk: FencekeeperClient;
      const procs: ProcessClient[] = [];
      const writers: FencedWrites[] = [];
      const holder = () => {
        const p = new ProcessClient(HOLDER, [s.server.url, JSON.stringify(running.address())]);
        procs.push(p);
        return p;
      };
      const writer = () => {
        const w = connect(running.address());
        writers.push(w);
        return w;
      };

      before(async function () {
        this.timeout(60_000);
        running = await store.start();
        fk = new FencekeeperClient({ servers: s.server.url });
      });
      after(async function () {
        this.timeout(30_000);
        await fk?.close();
        await running?.destroy();
      });
      afterEach(async () => {
        procs.splice(0).forEach((p) => p.kill());
        await Promise.all(writers.splice(0).map((w) => w.close()));
      });

      it("A paused past its TTL writes nothing once B has written: every write of A is stale, and B's data stays", async () => {
        const resource = uniqueResource("orders");
        const id = store.id(resource, 1);
        const a = holder();
        const b = holder();

        const tokenA = (await a.send(`acquire ${resource} 2000`)).token;
        expect(await a.send(`insert ${id} from-A`)).to.deep.equal({ status: "applied", fence: tokenA.generation });

        a.pause(); // a scheduler pause, a stalled runtime: A does not know, and stops renewing
        // B waits in line and is granted once A's lease has run out on the server.
        const tokenB = (await b.send(`acquire ${resource} 10000`, 30_000)).token;
        expect(BigInt(tokenB.generation) > BigInt(tokenA.generation)).to.equal(true);
        const applied = { status: "applied", fence: tokenB.generation };
        expect(await b.send(`update ${id} from-B`)).to.deep.equal(applied);
        for (const more of store.more) expect(await b.send(`${more} ${id} from-B`), more).to.deep.equal(applied);

        a.resume();
        expect(await a.send("held")).to.deep.equal({ held: false }); // its SDK knows, but A writes anyway
        // The recipe's UPDATE by hand, where there is one: its condition alone refuses A.
        if (store.bare) expect(await a.send(`bare-update ${id} from-A-stale`)).to.deep.equal({ rows: 0 });
        const stale = { status: "stale", fence: tokenB.generation };
        for (const write of ["update", "insert", ...store.more]) expect(await a.send(`${write} ${id} from-A-stale`), write).to.deep.equal(stale);
        expect(await a.send(`delete ${id}`)).to.deep.equal(stale);
        if (store.fencePerResource) {
          // A key B never wrote is refused too: the fence is the resource's, not the key's.
          expect(await a.send(`update ${store.id(resource, 2)} from-A-stale`)).to.deep.equal(stale);
          expect(await running.read(resource, store.id(resource, 2))).to.equal(undefined);
        }

        expect(await running.read(resource, id)).to.deep.equal({ value: "from-B", resource, fence: tokenB.generation });
      });

      it("two generations writing at once: once the newer one's data is there, the older one's never comes back", async function () {
        this.timeout(60_000);
        const resource = uniqueResource("race");
        const id = store.id(resource, 1);
        const older = await fk.acquire(resource, { ttl: 10_000 });
        const tokenOld: Token = older.token;
        await older.release();
        const newer = await fk.acquire(resource, { ttl: 10_000 });
        const tokenNew: Token = newer.token;
        expect(tokenNew.generation > tokenOld.generation).to.equal(true);
        const keys = await fk.tokenKeys();

        const [wOld, wNew] = [writer(), writer()];
        expect(await wOld.insert(tokenOld, id, "old:start", keys)).to.deep.equal({ status: "applied", fence: tokenOld.generation });
        const WRITES = 200;
        const outcomes: Record<"old" | "new", FencedOutcome[]> = { old: [], new: [] };
        const seen: string[] = ["old:start"];
        let done = 0;
        const write = async (name: "old" | "new", w: FencedWrites, token: Token) => {
          for (let i = 0; i < WRITES; i++) outcomes[name].push(await w.update(token, id, `${name}:${i}`, keys));
          done++;
        };
        const read = async () => {
          while (done < 2) {
            const v = (await running.read(resource, id))?.value;
            if (v !== undefined && v !== seen.at(-1)) seen.push(v);
          }
        };
        const oldWriting = write("old", wOld, tokenOld);
        const reading = read();
        // The newer writer starts once the older one has written a little, so that the two interleave.
        while (outcomes.old.length < 20) await new Promise((r) => setImmediate(r));
        await Promise.all([oldWriting, write("new", wNew, tokenNew), reading]);
        await newer.release();

        const firstNew = seen.findIndex((v) => v.startsWith("new:"));
        expect(firstNew).to.be.greaterThan(0);
        expect(seen.slice(firstNew).filter((v) => v.startsWith("old:")), "older data seen after the newer's").to.deep.equal([]);
        expect(outcomes.new.every((o) => o.status === "applied")).to.equal(true);
        // The older writer: applied until the newer one's first write, stale from then on, never applied again.
        expect(outcomes.old.map((o) => o.status).join(" ")).to.match(/^(applied ?)+(stale ?)+$/);
        expect(outcomes.old.at(-1)).to.deep.equal({ status: "stale", fence: tokenNew.generation });
        expect(await running.read(resource, id)).to.deep.equal({ value: `new:${WRITES - 1}`, resource, fence: String(tokenNew.generation) });
      });

      it("a forged token is refused before a byte of it reaches the store (counted by a proxy in front of it)", async () => {
        const resource = uniqueResource("forged");
        const [id, other] = [store.id(resource, 1), store.id(resource, 2)];
        const lease = await fk.acquire(resource, { ttl: 10_000 });
        const keys = await fk.tokenKeys();
        const genuine = lease.token;
        const proxy = await startDelayProxy(`tcp://127.0.0.1:${running.port}`);
        // Its own, closed before the proxy is: a connection cut under a pool is an error event.
        const w = connect(running.address(Number(new URL(proxy.url).port)));
        try {
          // Connected and ready: nothing more of the connection's own goes to the store after this.
          expect(await w.insert(genuine, id, "genuine", keys)).to.deep.equal({ status: "applied", fence: genuine.generation });
          const sent = proxy.bytesToServer();

          const poison = 2n ** 63n - 1n;
          const forged: Token[] = [
            { ...genuine, generation: poison }, // a generation raised by hand: the signature no longer covers it
            { ...genuine, generation: poison, signature: undefined, keyId: undefined }, // unsigned
            { ...genuine, generation: poison, keyId: "made-up" }, // a key the server never had
          ];
          for (const token of forged) {
            const outcomes = [
              await w.update(token, id, "poison", keys),
              await w.insert(token, other, "poison", keys),
              await w.delete(token, id, keys),
              ...(await Promise.all(store.more.map((m) => w.more[m](token, id, "poison", keys)))),
            ];
            for (const o of outcomes) expect(o.status).to.equal("unverified");
          }
          // Without keys nor unverified: true, the helper throws before any statement.
          const thrown = await w.update(forged[0], id, "poison", undefined).then(() => undefined, (e: unknown) => e);
          expect(thrown).to.be.instanceOf(TypeError);
          expect(proxy.bytesToServer(), "bytes sent to the store by the forged writes").to.equal(sent);

          // The count does move for a genuine write: the comparison above could have failed.
          expect(await w.update(genuine, id, "genuine-2", keys)).to.deep.equal({ status: "applied", fence: genuine.generation });
          expect(proxy.bytesToServer()).to.be.greaterThan(sent);
          expect(await running.read(resource, id)).to.deep.equal({ value: "genuine-2", resource, fence: String(genuine.generation) });
          expect(await running.read(resource, other)).to.equal(undefined);
        } finally {
          await w.close();
          await proxy.close();
          await lease.release();
        }
      });
    });
  }
});
