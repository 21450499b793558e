// The same checks for the fenced endpoint of every SDK: a service in that language (its HTTP middleware,
// and its gRPC interceptor where it has one) run as a process of its own, driven over the wire by real
// clients: a stale token is answered 409 / FAILED_PRECONDITION STALE_TOKEN with the fence and changes
// nothing; a forged one, or one copied from Describe (unsigned), is refused before the store is asked; a
// missing header is 400.
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { FencekeeperClient, type Token } from "../../client/index.js";
import { fencingTokenHeader } from "../../client/fenced-http.js";
import { eventually, failure, uniqueResource, useServer } from "../harness/suite.js";
import { scrape } from "../operations/support/metrics.js";

export interface ServiceProcess {
  /** The base URL of its HTTP service; of its gRPC service when it has one. */
  http: string;
  grpc?: string;
  stop(): Promise<void>;
}

/**
 * Starts `command args... --server <fencekeeper url>` and reads the first line it prints, {"http", "grpc"?}.
 * The process serves until its stdin ends.
 */
export async function startServiceProcess(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<ServiceProcess> {
  const child: ChildProcess = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env });
  const stderr: string[] = [];
  child.stderr!.on("data", (d) => stderr.push(String(d)));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} printed nothing in 30 s:\n${stderr.join("")}`)), 30_000);
    lines.once("line", (l) => (clearTimeout(timer), resolve(l)));
    child.once("exit", (code) => (clearTimeout(timer), reject(new Error(`${command} exited (${code}):\n${stderr.join("")}`))));
  }).catch((err) => {
    child.kill("SIGKILL");
    throw err;
  });
  const urls = JSON.parse(first) as { http: string; grpc?: string };
  return {
    ...urls,
    async stop() {
      child.stdin!.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
      lines.close();
    },
  };
}

/** The shared tests; `start` is given the fencekeeper server's URL. */
export function fencedServiceTests(language: string, start: (server: string) => Promise<ServiceProcess>, o: { admits: boolean; grpc: boolean }): void {
  describe(`fenced endpoint in ${language}: a real service driven over the wire`, () => {
    const s = useServer();
    let client: FencekeeperClient;
    let service: ServiceProcess;

    before(async function () {
      this.timeout(180_000);
      client = new FencekeeperClient({ servers: s.server.url });
      service = await start(s.server.url);
    });
    after(async function () {
      this.timeout(30_000);
      await service?.stop();
      await client?.close();
    });

    const put = (resource: string, token: Token | undefined, body: string) =>
      fetch(`${service.http}/items/${encodeURIComponent(resource)}`, {
        method: "PUT",
        headers: token ? { "fencing-token": fencingTokenHeader(token) } : {},
        body,
      });
    const item = async (resource: string) => (await fetch(`${service.http}/items/${encodeURIComponent(resource)}`)).json();
    const admits = async () => (await (await fetch(`${service.http}/admits`)).json()).admits as number;
    /** Two genuine tokens of a resource, the older one's lease released. */
    const generations = async (resource: string) => {
      const older = await client.acquire(resource, { ttl: 5000 });
      await older.release();
      const newer = await client.acquire(resource, { ttl: 5000 });
      return { older: older.token, newer };
    };

    it("HTTP: the newer generation writes; the older is answered 409 STALE_TOKEN with the fence and changes nothing", async () => {
      const resource = uniqueResource("orders");
      const { older, newer } = await generations(resource);
      expect((await put(resource, older, "older")).status).to.equal(200);
      expect((await put(resource, newer.token, "newer")).status).to.equal(200);
      const stale = await put(resource, older, "older-again");
      expect(stale.status).to.equal(409);
      expect(await stale.json()).to.include({
        code: "FailedPrecondition",
        reason: "STALE_TOKEN",
        resource,
        generation: String(older.generation),
        fence: String(newer.token.generation),
      });
      expect(await item(resource)).to.deep.equal({ value: "newer", generation: String(newer.token.generation) });
      await newer.release();
    });

    it("HTTP: a forged token is 403 TOKEN_SIGNATURE_INVALID before the store is asked; no header is 400", async () => {
      const resource = uniqueResource("orders");
      const lease = await client.acquire(resource, { ttl: 5000 });
      expect((await put(resource, lease.token, "genuine")).status).to.equal(200);
      const before = o.admits ? await admits() : 0;
      const forged = await put(resource, { ...lease.token, generation: 2n ** 62n }, "forged");
      expect(forged.status).to.equal(403);
      expect(await forged.json()).to.include({ code: "PermissionDenied", reason: "TOKEN_SIGNATURE_INVALID" });
      expect((await put(`${resource}-other`, lease.token, "elsewhere")).status).to.equal(403);
      const missing = await put(resource, undefined, "none");
      expect(missing.status).to.equal(400);
      expect((await missing.json()).message).to.match(/fencing.token/i);
      if (o.admits) expect(await admits(), "the store was asked").to.equal(before);
      expect(await item(resource)).to.deep.equal({ value: "genuine", generation: String(lease.token.generation) });
      await lease.release();
    });

    it("HTTP: the holder's token as a bystander's Describe shows it (no key id, no signature) is 403 TOKEN_SIGNATURE_INVALID, before the store is asked", async () => {
      const resource = uniqueResource("orders");
      const lease = await client.acquire(resource, { ttl: 5000 });
      const copied = (await client.describe(resource)).token!;
      expect(copied.generation).to.equal(lease.token.generation);
      expect(copied.signature?.length ?? 0, "Describe shows no signature to a caller that is not the principal").to.equal(0);
      const before = o.admits ? await admits() : 0;
      const refused = await put(resource, copied, "copied");
      expect(refused.status).to.equal(403);
      expect(await refused.json()).to.include({ code: "PermissionDenied", reason: "TOKEN_SIGNATURE_INVALID" });
      if (o.admits) expect(await admits(), "the store was asked").to.equal(before);
      expect((await put(resource, lease.token, "genuine")).status).to.equal(200);
      await lease.release();
    });

    it("HTTP: an older generation admitted just before a newer one cannot finish its write after it (the per-resource turn)", async () => {
      const resource = uniqueResource("orders");
      const { older, newer } = await generations(resource);
      const admitted = await admits();
      const slow = put(resource, older, "slow-older"); // admitted first, takes 400 ms to write
      await eventually(async () => (await admits()) > admitted, "the older write admitted");
      expect((await put(resource, newer.token, "newer")).status).to.equal(200);
      expect((await slow).status).to.equal(200);
      expect(await item(resource)).to.deep.equal({ value: "newer", generation: String(newer.token.generation) });
      await newer.release();
    });

    it("a flood of tokens naming unknown key ids costs the fencekeeper server at most one ListTokenKeys", async () => {
      const resource = uniqueResource("orders");
      const lease = await client.acquire(resource, { ttl: 5000 });
      expect((await put(resource, lease.token, "genuine")).status).to.equal(200); // the keys are fetched by now
      const served = async () =>
        (await scrape(s.server)).value("grpc_server_handled_total", { grpc_service: "fencekeeper.v1.LeaseService", grpc_method: "ListTokenKeys", grpc_code: "OK" });
      const before = await served();
      expect(before, "the service fetched the keys through the server (else this counter is not the one)").to.be.at.least(1);
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => put(resource, { ...lease.token, keyId: `forged-${i}` }, "x")));
      expect(answers.map((r) => r.status)).to.deep.equal(Array(30).fill(403));
      expect((await served()) - before).to.be.at.most(1);
      await lease.release();
    });

    if (o.grpc) it("gRPC: the older generation is FAILED_PRECONDITION with ErrorInfo STALE_TOKEN and the fence; a forged one PERMISSION_DENIED", async () => {
      const api = createClient(FencedStoreService, createGrpcTransport({ baseUrl: service.grpc! }));
      const call = (resource: string, token: Token, value: string) =>
        api.put({ resource, key: "k", value: Buffer.from(value) }, { headers: { "fencing-token": fencingTokenHeader(token) } });
      const resource = uniqueResource("orders");
      const { older, newer } = await generations(resource);
      await call(resource, newer.token, "newer");
      const err = await failure(call(resource, older, "older"));
      expect(err.code).to.equal(Code.FailedPrecondition);
      const info = err.findDetails(ErrorInfoSchema)[0];
      expect(info).to.include({ reason: "STALE_TOKEN", domain: "fencekeeper.io" });
      expect(info.metadata).to.include({ fence: String(newer.token.generation) });
      const forged = await failure(call(resource, { ...newer.token, generation: newer.token.generation + 10n }, "forged"));
      expect(forged.code).to.equal(Code.PermissionDenied);
      expect(forged.findDetails(ErrorInfoSchema)[0]?.reason).to.equal("TOKEN_SIGNATURE_INVALID");
      expect(await item(resource)).to.deep.equal({ value: "newer", generation: String(newer.token.generation) });
      await newer.release();
    });
  });
}
