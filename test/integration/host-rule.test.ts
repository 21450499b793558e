// DNS rebinding against the API port. Served without authentication (npm start's default), the port
// answers only requests that name it in their Host (or :authority): an IP address, localhost, the listen
// host, or a name given to --allowed-hosts. A web page on rebind.evil.example whose name was pointed at
// 127.0.0.1 sends its own name, and is refused PERMISSION_DENIED on every protocol, unary and streams,
// with the fast path on and off, before anything is decided: the resource it tried to take stays free.
// With authentication on, the Host is not what keeps a page out, and is not checked.
import http from "node:http";
import http2 from "node:http2";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { SignJWT, exportSPKI, generateKeyPair } from "jose";
import { AcquireRequestSchema, KeepAliveRequestSchema, ObserveRequestSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually } from "../harness/suite.js";
import { frame } from "../harness/wire.js";
import { scrape } from "../operations/support/metrics.js";

const LEASE = "/fencekeeper.v1.LeaseService";
const HEALTH = "/grpc.health.v1.Health/Check";
const PERMISSION_DENIED = 7;
const EVIL = "rebind.evil.example";

interface Reply {
  http: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** One request over HTTP/1.1 or HTTP/2 (prior knowledge), naming the Host given, as a browser or a raw client sends it. */
function send(url: string, version: 1 | 2, path: string, host: string, headers: Record<string, string>, body: Buffer): Promise<Reply> {
  const u = new URL(url);
  const authority = /:\d+$/.test(host) ? host : `${host}:${u.port}`;
  if (version === 1) {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: u.hostname, port: u.port, method: "POST", path, headers: { ...headers, host: authority, connection: "close" } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ http: res.statusCode ?? 0, headers: flat({ ...res.headers, ...res.trailers }), body: Buffer.concat(chunks) }));
      });
      req.on("error", reject);
      req.end(body);
    });
  }
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, ":authority": authority, ...headers });
    const fields: Record<string, string> = {};
    const chunks: Buffer[] = [];
    req.on("response", (h) => Object.assign(fields, flat(h)));
    req.on("trailers", (h) => Object.assign(fields, flat(h)));
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", reject);
    req.on("close", () => {
      session.close();
      resolve({ http: Number(fields[":status"]), headers: fields, body: Buffer.concat(chunks) });
    });
    req.end(body);
  });
}

function flat(h: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = String(Array.isArray(v) ? v[0] : v);
  return out;
}

/** The gRPC code and message of a reply, as each protocol carries it. */
function statusOf(kind: Protocol["kind"], r: Reply): { code: number; message: string } {
  if (kind === "grpc" || kind === "grpc-web") {
    const fields = { ...r.headers };
    // gRPC-Web: a trailer frame (flag 0x80) at the end of the body.
    for (let at = 0; kind === "grpc-web" && at + 5 <= r.body.length; ) {
      const length = r.body.readUInt32BE(at + 1);
      if (r.body[at] & 0x80) {
        for (const line of r.body.subarray(at + 5, at + 5 + length).toString("utf8").split("\r\n")) {
          const i = line.indexOf(":");
          if (i > 0) fields[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
        }
      }
      at += 5 + length;
    }
    expect(r.http, JSON.stringify(r.headers)).to.equal(200);
    return { code: Number(fields["grpc-status"] ?? -1), message: decodeURIComponent(fields["grpc-message"] ?? "") };
  }
  const codes: Record<string, number> = { permission_denied: PERMISSION_DENIED, unauthenticated: 16 };
  if (kind === "connect") {
    if (r.http === 200) return { code: 0, message: "" };
    const json = JSON.parse(r.body.toString("utf8"));
    expect(r.http).to.equal(403);
    return { code: codes[json.code] ?? -1, message: json.message };
  }
  // A Connect stream: its end-of-stream message (flag 0x02) carries the error, if any.
  for (let at = 0; at + 5 <= r.body.length; ) {
    const length = r.body.readUInt32BE(at + 1);
    if (r.body[at] & 0x02) {
      const end = JSON.parse(r.body.subarray(at + 5, at + 5 + length).toString("utf8"));
      return end.error ? { code: codes[end.error.code] ?? -1, message: end.error.message } : { code: 0, message: "" };
    }
    at += 5 + length;
  }
  throw new Error(`a Connect stream without its end (HTTP ${r.http}, ${r.body.length} bytes)`);
}

interface Protocol {
  name: string;
  kind: "grpc" | "grpc-web" | "connect" | "connect-stream";
  version: 1 | 2;
  path: string;
  headers: Record<string, string>;
  body: () => Buffer;
}

const acquire = (resource: string) => Buffer.from(toBinary(AcquireRequestSchema, create(AcquireRequestSchema, { resource, ttl: { seconds: 30n } })));
const observe = (resource: string) => Buffer.from(toBinary(ObserveRequestSchema, create(ObserveRequestSchema, { resource })));
const keepAlive = () => Buffer.from(toBinary(KeepAliveRequestSchema, create(KeepAliveRequestSchema, {})));

/** Every way a call comes in, each naming the resource given (the streams only watch it). */
function protocols(resource: string): Protocol[] {
  const grpc = { "content-type": "application/grpc", te: "trailers" };
  const web = { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" };
  const connect = { "content-type": "application/json", "connect-protocol-version": "1" };
  const connectStream = { "content-type": "application/connect+proto", "connect-protocol-version": "1" };
  const json = () => Buffer.from(JSON.stringify({ resource, ttl: "30s" }));
  return [
    { name: "gRPC unary", kind: "grpc", version: 2, path: `${LEASE}/Acquire`, headers: grpc, body: () => frame(acquire(resource)) },
    { name: "gRPC server stream", kind: "grpc", version: 2, path: `${LEASE}/Observe`, headers: grpc, body: () => frame(observe(resource)) },
    { name: "gRPC bidirectional stream", kind: "grpc", version: 2, path: `${LEASE}/KeepAlive`, headers: grpc, body: () => frame(keepAlive()) },
    { name: "gRPC-Web unary over HTTP/1.1", kind: "grpc-web", version: 1, path: `${LEASE}/Acquire`, headers: web, body: () => frame(acquire(resource)) },
    { name: "gRPC-Web unary over HTTP/2", kind: "grpc-web", version: 2, path: `${LEASE}/Acquire`, headers: web, body: () => frame(acquire(resource)) },
    { name: "gRPC-Web server stream over HTTP/1.1", kind: "grpc-web", version: 1, path: `${LEASE}/Observe`, headers: web, body: () => frame(observe(resource)) },
    { name: "Connect unary over HTTP/1.1", kind: "connect", version: 1, path: `${LEASE}/Acquire`, headers: connect, body: json },
    { name: "Connect unary over HTTP/2", kind: "connect", version: 2, path: `${LEASE}/Acquire`, headers: connect, body: json },
    { name: "Connect server stream over HTTP/1.1", kind: "connect-stream", version: 1, path: `${LEASE}/Observe`, headers: connectStream, body: () => frame(observe(resource)) },
  ];
}

for (const fastPath of ["on", "off"]) {
  describe(`the API port without authentication answers only requests that name it (--unary-fast-path ${fastPath})`, function () {
    this.timeout(120_000);
    let etcd: TestEtcd;
    let server: TestServer;

    before(async function () {
      this.timeout(60_000);
      etcd = await startEtcd();
      server = await startServer({ etcd: etcd.endpoint, args: ["--unary-fast-path", fastPath, "--allowed-hosts", "fk.internal,Other.Example."] });
    });
    after(async function () {
      this.timeout(30_000);
      await server?.stop();
      await etcd?.destroy();
    });

    it(`refuses ${EVIL} PERMISSION_DENIED on every protocol, naming --allowed-hosts, and grants nothing`, async () => {
      const resource = `rebind-${fastPath}`;
      for (const p of protocols(resource)) {
        const r = await send(server.url, p.version, p.path, `${EVIL}:${new URL(server.url).port}`, p.headers, p.body());
        const { code, message } = statusOf(p.kind, r);
        expect(code, `${p.name}: ${message}`).to.equal(PERMISSION_DENIED);
        expect(message, p.name).to.include(EVIL).and.to.include("--allowed-hosts");
      }
      // The Acquires above took nothing: the resource is free for a caller that names the server.
      const p = protocols(resource)[6];
      const r = await send(server.url, p.version, p.path, "127.0.0.1", p.headers, p.body());
      expect(statusOf(p.kind, r).code, p.name).to.equal(0);
    });

    it("a refusal is logged and counted like any other refused call", async () => {
      const labels = { grpc_service: "fencekeeper.v1.LeaseService", grpc_method: "Acquire", grpc_code: "PermissionDenied" };
      const before = (await scrape(server)).value("grpc_server_handled_total", labels);
      const p = protocols(`counted-${fastPath}`)[0];
      await send(server.url, p.version, p.path, EVIL, p.headers, p.body());
      await eventually(async () => (await scrape(server)).value("grpc_server_handled_total", labels) === before + 1, "one PermissionDenied counted", 5000);
      expect(server.logs.some((l) => l.includes(`"msg":"call"`) && l.includes(`"code":"PermissionDenied"`) && l.includes(`"rpc":"fencekeeper.v1.LeaseService/Acquire"`))).to.equal(true);
    });

    it("serves an IP address, localhost, and the names of --allowed-hosts (any case, any port, a trailing dot)", async () => {
      const hosts = ["127.0.0.1", "10.1.2.3:80", "[::1]:1", "localhost", "LOCALHOST:9", "fk.internal", "other.example.:443"];
      for (const [i, host] of hosts.entries()) {
        const p = protocols(`allowed-${fastPath}-${i}`)[6]; // Connect unary over HTTP/1.1
        const r = await send(server.url, p.version, p.path, host, p.headers, p.body());
        expect(statusOf(p.kind, r).code, host).to.equal(0);
        const g = protocols(`allowed-h2-${fastPath}-${i}`)[0]; // gRPC
        const r2 = await send(server.url, g.version, g.path, host, g.headers, g.body());
        expect(statusOf(g.kind, r2).code, host).to.equal(0);
      }
      for (const host of ["fk.internal.evil.example", "evil.fk.internal", "localhost.evil.example", "127.0.0.1.nip.io"]) {
        const p = protocols(`near-${fastPath}`)[6];
        const r = await send(server.url, p.version, p.path, host, p.headers, p.body());
        expect(statusOf(p.kind, r).code, host).to.equal(PERMISSION_DENIED);
      }
    });

    it("health answers any Host: probes reveal no lease", async () => {
      const r = await send(server.url, 2, HEALTH, EVIL, { "content-type": "application/grpc", te: "trailers" }, frame(Buffer.alloc(0)));
      expect(statusOf("grpc", r).code).to.equal(0);
    });
  });
}

describe("the API port with authentication does not check the Host", function () {
  this.timeout(120_000);
  let dir: string;
  let etcd: TestEtcd;
  let server: TestServer;
  let bearer: string;

  before(async function () {
    this.timeout(60_000);
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-host-rule-"));
    const pair = await generateKeyPair("ES256");
    writeFileSync(join(dir, "jwt.pem"), await exportSPKI(pair.publicKey));
    bearer = `Bearer ${await new SignJWT({ sub: "alice" }).setProtectedHeader({ alg: "ES256" }).setIssuer("https://issuer.test").setAudience("fencekeeper").setIssuedAt().setExpirationTime("10m").sign(pair.privateKey)}`;
    etcd = await startEtcd();
    server = await startServer({ etcd: etcd.endpoint, args: ["--jwt-keys", join(dir, "jwt.pem"), "--jwt-issuer", "https://issuer.test", "--jwt-audience", "fencekeeper"] });
  });
  after(async function () {
    this.timeout(30_000);
    await server?.stop();
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a caller with credentials is served whatever Host it names; one without is UNAUTHENTICATED", async () => {
    const p = protocols("with-auth")[6];
    const served = await send(server.url, p.version, p.path, EVIL, { ...p.headers, authorization: bearer }, p.body());
    expect(statusOf(p.kind, served).code).to.equal(0);
    const anonymous = await send(server.url, p.version, p.path, EVIL, p.headers, p.body());
    expect(anonymous.http).to.equal(401);
  });
});
