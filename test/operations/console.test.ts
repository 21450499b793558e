// The web console (--console-listen) in a real headless Chromium (Debian's chromium, driven by
// puppeteer-core): a resource acquired by a test appears on the page with its holder, generation and
// fence, a waiter shows in its row, and its row goes once it is released, all without reloading (Observe
// and the listing keep the page live). The page is served only to its own Host, serves only the
// read-only calls, and with JWT authentication shows nothing until given a token. A screenshot of the
// page is saved to .test-results/console.png (docs/console.png is one).
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

        // A waiter joins: the row shows it without a reload (Observe, then Describe).
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

    it("answers only requests that name its own address, and serves only the read-only calls", async () => {
      const rebound = await rawRequest(url, { method: "GET", path: "/", host: "attacker.example:80" });
      expect(rebound.status).to.equal(421);
      const write = await rawRequest(url, { method: "POST", path: "/fencekeeper.v1.LeaseService/Acquire", body: JSON.stringify({ resource: "x", ttl: "10s" }) });
      expect(write.status).to.equal(404);
      const put = await rawRequest(url, { method: "POST", path: "/fencekeeper.v1.FencedStoreService/Put", body: "{}" });
      expect(put.status).to.equal(404);
      const list = await rawRequest(url, { method: "POST", path: "/fencekeeper.v1.LeaseService/ListResources", body: "{}" });
      expect(list.status).to.equal(200);
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
