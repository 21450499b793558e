// Every language's conformance client (SCENARIO.md) against one etcd and one server, then the clients
// against each other: a lease taken in one language fences a writer in another.
// scripts/setup-polyglot.sh builds the clients (npm test runs it first). A client that is not built fails
// its tests with the reason and the install hint that the setup left in .conformance/<language>.missing.
import { expect } from "chai";
import { useServer, uniqueResource } from "../harness/suite.js";
import { CLIENTS, call, endCalls, run, type Client, type Run } from "./typescript/run-clients.js";

describe("conformance: every language's client against one server", function () {
  this.timeout(120_000);
  const s = useServer();
  after(endCalls);

  describe("the scenario of SCENARIO.md", () => {
    // The scenarios spend most of their time waiting (KeepAlive over three TTLs), so they run at once.
    const scenarios = new Map<string, Promise<Run>>();
    before(() => {
      for (const client of CLIENTS) {
        const started = run(client, "scenario", { server: s.server.url, resource: uniqueResource(`scenario-${client.name}`) });
        started.catch(() => {}); // reported by the client's own test
        scenarios.set(client.name, started);
      }
    });
    after(() => {
      const times = [...scenarios.entries()].map(async ([name, r]) => `${name} ${((await r.catch(() => undefined))?.ms ?? NaN) / 1000}s`);
      return Promise.all(times).then((t) => console.log(`      scenario run times (all at once): ${t.join(", ")}`));
    });

    for (const client of CLIENTS) {
      it(client.title, async () => {
        const r = await scenarios.get(client.name)!;
        expect(r.code, `${client.title} scenario failed:\n${r.stdout}${r.stderr}`).to.equal(0);
        expect(r.stdout).to.match(/^ok clean up$/m);
      });
    }
  });

  describe("across languages: a lease taken in one fences a writer in another", () => {
    // The ring of SCENARIO.md: each client holds once and writes once.
    const pairs = CLIENTS.map((holder, i) => [holder, CLIENTS[(i + 1) % CLIENTS.length]] as const);
    for (const [holder, writer] of pairs) {
      it(`${holder.title} holds, ${writer.title} writes`, async () => {
        const server = s.server.url;
        const resource = uniqueResource(`cross-${holder.name}-${writer.name}`);
        const put = (client: Client, token: Record<string, any>, value: string) =>
          call(client, "put", { server, resource, key: "owner", value, generation: token.generation, "lease-id": token.lease_id });

        // A TTL long enough for several process starts between acquire and release: nothing renews these
        // leases, and on a loaded machine a JVM's three starts after the writer's acquire took over 15 s.
        const a = await call(holder, "acquire", { server, resource, holder: holder.name, ttl: "60" });
        expect(a, "holder acquire").to.include({ ok: true });
        expect(await put(holder, a, `by ${holder.name}`), "holder put").to.deep.equal({ ok: true, fence: a.generation });
        expect(await call(holder, "release", { server, resource, generation: a.generation, "lease-id": a.lease_id })).to.deep.equal({ ok: true });

        const b = await call(writer, "acquire", { server, resource, holder: writer.name, ttl: "60" });
        expect(b, "writer acquire").to.include({ ok: true });
        expect(BigInt(b.generation) > BigInt(a.generation), `generation ${b.generation} after ${a.generation}`).to.equal(true);
        expect(await put(writer, b, `by ${writer.name}`), "writer put").to.deep.equal({ ok: true, fence: b.generation });

        const stale = { ok: false, code: "FAILED_PRECONDITION", reason: "STALE_TOKEN" };
        expect(await put(holder, a, "stale"), `${holder.title} with its old token`).to.deep.equal(stale);
        expect(await put(writer, a, "stale"), `${writer.title} with ${holder.title}'s old token`).to.deep.equal(stale);
        expect(await call(writer, "get", { server, resource, key: "owner" })).to.deep.equal({ ok: true, found: true, value: `by ${writer.name}` });
        expect(await call(writer, "release", { server, resource, generation: b.generation, "lease-id": b.lease_id })).to.deep.equal({ ok: true });
      });
    }
  });
});
