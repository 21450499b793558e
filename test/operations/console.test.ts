// The web console (--console-listen) in a real headless Chromium (Debian's chromium, driven by
// puppeteer-core): a resource acquired by a test appears on the page with its holder, generation and
// fence, a waiter shows in its row, and its row goes once it is released, all without reloading (the
// page lists again every few seconds). With 1,000 resources in use it shows every one, correctly, and a
// change to any of them, from one ListResources call at a time (no call per row). A name's bidi
// controls and line separators show as escapes. The page is served only to its own Host, serves only
// ListResources, and with JWT authentication shows nothing until given a token. Screenshots of the page
// are saved to .test-results/console.png and console-1000.png (docs/console.png is the latter).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { clientsFor, type Clients } from "../harness/clients.js";
import { AUDIENCE, ISSUER, issuerKeys, sign } from "../harness/jwt-fixtures.js";
import { startServer, type TestServer } from "../harness/server.js";
import { uniqueResource } from "../harness/suite.js";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { AcquireMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

/** The console's address, from the server's "console" log line. */
function consoleUrl(server: TestServer): string {
  for (const line of server.logs) {
    try {
      const entry = JSON.parse(line);
      if (entry.msg === "console") return entry.url;
    } catch {
      // not JSON
    }
  }
  throw new Error(`the server logged no console address:\n${server.logs.join("\n")}`);
}

/** A raw HTTP/1.1 request with the Host header given, as a browser on another name would send it. */
function rawRequest(url: string, o: { method: string; path: string; host?: string; body?: string }): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method: o.method, path: o.path, headers: { host: o.host ?? u.host, "content-type": "application/json", connection: "close" } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end(o.body ?? "");
  });
}

const rowOf = (page: Page, resource: string) =>
  page.$$eval(`tr[data-resource="${resource}"] td`, (tds) => tds.map((td) => td.textContent ?? "")).catch(() => [] as string[]);

describe("the web console", function () {
  this.timeout(90_000);
  let browser: Browser;
  let etcd: TestEtcd;

  before(async function () {
    // A fresh machine installs chromium (a minute or two); the setup started that in the background.
    this.timeout(15 * 60_000);
    execFileSync("bash", ["scripts/setup-chromium.sh"], { stdio: ["ignore", "ignore", "inherit"] });
    etcd = await startEtcd();
    browser = await puppeteer.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      // As root in a container: no sandbox; no GPU; /dev/shm may be small.
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
    });
  });

  after(async () => {
    await browser?.close();
    await etcd?.destroy();
  });

  describe("without authentication", () => {
    let server: TestServer;
    let c: Clients;
    let url: string;

    before(async () => {
      server = await startServer({ etcd: etcd.endpoint, args: ["--console-listen", "127.0.0.1:0"] });
      c = clientsFor(server.url);
      url = consoleUrl(server);
    });
    after(async () => {
      await server?.stop();
    });

    it("shows a resource once acquired, with its holder, generation and fence, its waiter, and drops it once released", async () => {
      const page = await browser.newPage();
      try {
        await page.setViewport({ width: 1280, height: 420 });
        await page.goto(url, { waitUntil: "domcontentloaded" });
        await page.waitForFunction(() => document.body.dataset.listed !== undefined, { timeout: 20_000 });
        const resource = uniqueResource("console");
        const other = uniqueResource("console-shared");
        const { token } = await c.lease.acquire({ resource, ttl: ttl(30), holder: "worker-7" });
        await c.lease.acquire({ resource: other, ttl: ttl(30), holder: "reader-1", mode: AcquireMode.SHARED });
        await c.store.put({ resource, key: "k", value: new TextEncoder().encode("v"), mutation: { token } });
        await page.waitForSelector(`tr[data-resource="${resource}"]`, { timeout: 20_000 });
        let cells = await rowOf(page, resource);
        expect(cells[0]).to.equal(resource);
        expect(cells[1]).to.equal("exclusive");
        expect(cells[2]).to.equal("worker-7");
        expect(cells[4]).to.equal(String(token!.generation));

        // A waiter joins: the row shows it without a reload (the next listing).
        const waiting = new AbortController();
        const waiter = c.lease.acquire({ resource, ttl: ttl(30), holder: "worker-8", wait: true }, { signal: waiting.signal }).catch(() => undefined);
        await page.waitForFunction((r) => document.querySelector(`tr[data-resource="${r}"] td:nth-child(8)`)?.textContent === "1", { timeout: 20_000 }, resource);
        cells = await rowOf(page, resource);
        expect(cells[5], "the fence, raised by the Put").to.equal(String(token!.generation));
        mkdirSync(".test-results", { recursive: true });
        await page.screenshot({ path: ".test-results/console.png" });
        waiting.abort();
        await waiter;

        await c.lease.release({ token });
        await page.waitForFunction((r) => !document.querySelector(`tr[data-resource="${r}"]`), { timeout: 20_000 }, resource);
        expect(await rowOf(page, other), "the shared resource stays").to.have.length(10);
      } finally {
        await page.close();
      }
    });

    it("shows a name's bidi controls and line separators as escapes, so that it reads as what it is", async () => {
      const page = await browser.newPage();
      try {
        await page.goto(url, { waitUntil: "domcontentloaded" });
        // U+202E would show "invoice\u202Efdp.exe" as "invoiceexe.pdf"; U+2028 would break the line.
        const resource = `${uniqueResource("console-bidi")}/invoice\u202Efdp.exe\u2028next`;
        const { token } = await c.lease.acquire({ resource, ttl: ttl(30), holder: "ops\u2029\u2066team" });
        await page.waitForFunction((r) => [...document.querySelectorAll<HTMLTableRowElement>("tbody tr")].some((tr) => tr.dataset.resource === r), { timeout: 20_000 }, resource);
        const shown = await page.evaluate((r) => {
          const tr = [...document.querySelectorAll<HTMLTableRowElement>("tbody tr")].find((row) => row.dataset.resource === r)!;
          return {
            name: tr.cells[0].textContent,
            holder: tr.cells[2].textContent,
            marked: [...tr.querySelectorAll(".escaped")].map((e) => e.textContent),
            raw: /[\u202a-\u202e\u2066-\u2069\u2028\u2029]/.test(document.body.innerText),
          };
        }, resource);
        expect(shown).to.deep.equal({
          name: resource.replace("\u202E", "\\u202E").replace("\u2028", "\\u2028"),
          holder: "ops\\u2029\\u2066team",
          marked: ["\\u202E", "\\u2028", "\\u2029", "\\u2066"],
          raw: false,
        });
        await c.lease.release({ token });
      } finally {
        await page.close();
      }
    });

    it("answers only requests that name its own address, and serves only the read-only calls", async () => {
      const rebound = await rawRequest(url, { method: "GET", path: "/", host: "attacker.example:80" });
      expect(rebound.status).to.equal(421);
      const write = await rawRequest(url, { method: "POST", path: "/fencekeeper.v1.LeaseService/Acquire", body: JSON.stringify({ resource: "x", ttl: "10s" }) });
      expect(write.status).to.equal(404);
      const put = await rawRequest(url, { method: "POST", path: "/fencekeeper.v1.FencedStoreService/Put", body: "{}" });
      expect(put.status).to.equal(404);
      const list = await rawRequest(url, { method: "POST", path: "/fencekeeper.v1.LeaseService/ListResources", body: "{}" });
      expect(list.status).to.equal(200);
      // The page makes one call, ListResources: no stream is served here, nor a call per resource.
      for (const method of ["Observe", "Describe"]) {
        const other = await rawRequest(url, { method: "POST", path: `/fencekeeper.v1.LeaseService/${method}`, body: JSON.stringify({ resource: "x" }) });
        expect(other.status, method).to.equal(404);
      }
    });
  });

  describe("with 1,000 resources in use", () => {
    const COUNT = 1000;
    let server: TestServer;
    let c: Clients;
    let url: string;
    const sessions: bigint[] = [];

    before(async function () {
      this.timeout(10 * 60_000);
      server = await startServer({ etcd: etcd.endpoint, args: ["--console-listen", "127.0.0.1:0"] });
      c = clientsFor(server.url);
      url = consoleUrl(server);
    });
    after(async () => {
      for (const sessionId of sessions) await c.lease.closeSession({ sessionId }).catch(() => undefined);
      await server?.stop();
    });

    it("shows all 1,000 with their holders and generations from one listing at a time, then a release and a new holder", async function () {
      this.timeout(15 * 60_000);
      // Four sessions of the longest TTL hold 250 each, so that none needs renewing during the test.
      const prefix = uniqueResource("console-bulk");
      const names = Array.from({ length: COUNT }, (_, i) => `${prefix}/${String(i).padStart(4, "0")}`);
      for (let i = 0; i < 4; i++) sessions.push((await c.lease.openSession({ ttl: ttl(300), holder: `bulk-${i}` })).sessionId);
      const expected = new Map<string, { holder: string; generation: bigint; leaseId: bigint }>();
      for (let i = 0; i < COUNT; i += 50) {
        await Promise.all(
          names.slice(i, i + 50).map(async (resource, j) => {
            const holder = `worker-${(i + j) % 7}`;
            const { token } = await c.lease.acquire({ resource, holder, sessionId: sessions[(i + j) % 4] });
            expected.set(resource, { holder, generation: token!.generation, leaseId: token!.leaseId });
          }),
        );
      }

      const page = await browser.newPage();
      // Every API call the page makes, and how many are open at once.
      const calls: string[] = [];
      let open = 0;
      let mostOpen = 0;
      const api = (r: { url(): string }) => new URL(r.url()).pathname.startsWith("/fencekeeper.");
      page.on("request", (r) => {
        if (!api(r)) return;
        calls.push(new URL(r.url()).pathname);
        mostOpen = Math.max(mostOpen, ++open);
      });
      page.on("requestfinished", (r) => void (api(r) && open--));
      page.on("requestfailed", (r) => void (api(r) && open--));
      try {
        await page.setViewport({ width: 1280, height: 600 });
        await page.goto(url, { waitUntil: "domcontentloaded" });
        await page.waitForFunction(
          (p, n) => [...document.querySelectorAll<HTMLTableRowElement>("tbody tr")].filter((tr) => (tr.dataset.resource ?? "").startsWith(p + "/")).length === n,
          { timeout: 180_000, polling: 500 },
          prefix,
          COUNT,
        );

        // Every row as the server has it: holder, mode, generation, fence, waiters; in name order.
        const rows = await page.$$eval(
          "tbody tr",
          (trs, p) => trs.filter((tr) => (tr.dataset.resource ?? "").startsWith(p + "/")).map((tr) => [...tr.cells].map((td) => td.textContent ?? "")),
          prefix,
        );
        expect(rows.map((r) => r[0])).to.deep.equal(names);
        for (const [resource, mode, holder, principal, generation, fence, delay, waiters] of rows) {
          const e = expected.get(resource)!;
          expect({ resource, mode, holder, principal, generation, fence, delay, waiters }).to.deep.equal({
            resource,
            mode: "exclusive",
            holder: e.holder,
            principal: "",
            generation: String(e.generation),
            fence: "0",
            delay: "",
            waiters: "0",
          });
        }
        const status = await page.$eval("#status", (el) => el.textContent ?? "");
        console.log(`      the page with ${COUNT} of ours in use: ${status}`);
        mkdirSync(".test-results", { recursive: true });
        await page.screenshot({ path: ".test-results/console-1000.png" });

        // A release, a new holder, a waiter and a raised fence each show without a reload.
        const [gone, taken, waited] = [names[17], names[500], names[999]];
        await c.lease.release({ token: { resource: gone, generation: expected.get(gone)!.generation, leaseId: expected.get(gone)!.leaseId } });
        await c.lease.release({ token: { resource: taken, generation: expected.get(taken)!.generation, leaseId: expected.get(taken)!.leaseId } });
        const { token: newToken } = await c.lease.acquire({ resource: taken, ttl: ttl(300), holder: "newcomer" });
        await c.store.put({ resource: taken, key: "k", value: new TextEncoder().encode("v"), mutation: { token: newToken } });
        const waiting = new AbortController();
        const waiter = c.lease.acquire({ resource: waited, ttl: ttl(30), holder: "in-line", wait: true }, { signal: waiting.signal }).catch(() => undefined);
        const changed = Date.now();
        const dump = async () =>
          JSON.stringify({ status: await page.$eval("#status", (el) => el.textContent), gone: await rowOf(page, gone), taken: await rowOf(page, taken), waited: await rowOf(page, waited) });
        await page.waitForFunction(
          (g, t, w, gen) => {
            // No function declared in here: the test's transpiler would name it with a helper the page lacks.
            const tk = document.querySelector<HTMLTableRowElement>(`tr[data-resource="${t}"]`)?.cells;
            const wt = document.querySelector<HTMLTableRowElement>(`tr[data-resource="${w}"]`)?.cells;
            return (
              !document.querySelector(`tr[data-resource="${g}"]`) &&
              tk?.[2]?.textContent === "newcomer" &&
              tk[4]?.textContent === gen &&
              tk[5]?.textContent === gen &&
              wt?.[7]?.textContent === "1"
            );
          },
          { timeout: 120_000, polling: 200 },
          gone,
          taken,
          waited,
          String(newToken!.generation),
        ).catch(async (err) => {
          throw new Error(`${err}: ${await dump()}`);
        });
        console.log(`      a release, a new holder, a fence and a waiter shown ${Date.now() - changed} ms after the last of them`);
        waiting.abort();
        await waiter;
        await c.lease.release({ token: newToken });
        expect(await rowOf(page, names[18]), "a row untouched stays").to.have.length(10);

        // One listing at a time, and nothing but ListResources: not a call per row.
        expect(mostOpen, "calls open at once").to.equal(1);
        expect([...new Set(calls)]).to.deep.equal(["/fencekeeper.v1.LeaseService/ListResources"]);
      } finally {
        await page.close();
      }
    });
  });

  describe("with JWT authentication and a policy", () => {
    let dir: string;
    let server: TestServer;
    let token: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), "fencekeeper-console-"));
      const keys = await issuerKeys(dir);
      const policy = join(dir, "policy.json");
      writeFileSync(
        policy,
        JSON.stringify({
          version: 1,
          rules: [
            { principals: ["alice"], verbs: ["acquire", "observe"], resources: ["seen/*"] },
            { principals: ["alice"], verbs: ["acquire"], resources: ["unseen/*"] },
          ],
        }),
      );
      server = await startServer({
        etcd: etcd.endpoint,
        args: ["--console-listen", "127.0.0.1:0", "--jwt-keys", keys.pemFile, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--policy", policy],
      });
      token = await sign(keys.es256.privateKey, { sub: "alice" });
    });
    after(async () => {
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("shows nothing but why until given a bearer token, then only what the policy lets its principal observe", async () => {
      const bearer: Interceptor = (next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      };
      const lease = createClient(LeaseService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer] }));
      await lease.acquire({ resource: "seen/1", ttl: ttl(30), holder: "visible" });
      await lease.acquire({ resource: "unseen/1", ttl: ttl(30), holder: "hidden" });
      const page = await browser.newPage();
      try {
        await page.goto(consoleUrl(server), { waitUntil: "domcontentloaded" });
        await page.waitForFunction(() => /not authenticated/.test(document.getElementById("status")?.textContent ?? ""), { timeout: 20_000 });
        expect(await page.$$eval("tbody tr", (rows) => rows.length)).to.equal(0);
        await page.type("#bearer", token);
        await page.$eval("#bearer", (el) => el.dispatchEvent(new Event("change")));
        await page.waitForSelector('tr[data-resource="seen/1"]', { timeout: 20_000 });
        expect(await rowOf(page, "unseen/1")).to.deep.equal([]);
      } finally {
        await page.close();
      }
    });
  });
});
