// Who is calling, where it takes real processes and sockets: key files refused with what is wrong with them
// (a certificate made by openssl among them), and client certificates over real TLS connections (HTTP/2,
// where Node hands the handler a proxy of the connection's socket, and HTTP/1.1). The rest is test/unit/authenticator.test.ts.
import { expect } from "chai";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, exportPKCS8, generateSecret } from "jose";
import type { AuthenticationConfig } from "../../server/auth/authentication-config.js";
import { Authenticator } from "../../server/auth/authenticator.js";
import type { Principal } from "../../server/auth/principal.js";
import { DomainError } from "../../server/errors/errors.js";
import { clientCertFor, makeCerts, type Certs, type ClientCert } from "../operations/support/certs.js";
import { AUDIENCE, ISSUER, cleartext, configError, issuerKeys, jwtConfig, refusal, sign, type Pair } from "../harness/jwt-fixtures.js";

describe("authentication", () => {
  let dir: string;
  let es256: Pair;
  let ed: Pair;
  let stranger: Pair;
  let pemFile: string;
  let jwksFile: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-jwt-"));
    ({ es256, ed, stranger, pemFile, jwksFile } = await issuerKeys(dir));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  describe("key files", () => {
    it("refuses a bad key file, naming it and what is wrong with it", async () => {
      const write = (name: string, content: string) => {
        const path = join(dir, name);
        writeFileSync(path, content);
        return path;
      };
      // jose will not even make so weak a key; Node will.
      const rsa1024 = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ type: "spki", format: "pem" }) as string;
      const secret = await generateSecret("HS256", { extractable: true });
      const certs = makeCerts();
      try {
        const cases: [string, RegExp][] = [
          [join(dir, "missing.pem"), /cannot read "[^"]+missing.pem" \(ENOENT\)/],
          [write("garbage.txt", "hello"), /is neither a PEM public key nor a JWK or JWK Set/],
          [write("private.pem", await exportPKCS8(es256.privateKey)), /holds a private key \(PRIVATE KEY\); give the server only the public key/],
          [write("cert.pem", readFileSync(certs.ca, "utf8")), /holds a certificate, not a public key; extract its key with openssl x509/],
          [write("weak.pem", rsa1024), /RSA with 1024 bits; use at least 2048/],
          [write("hmac.jwk", JSON.stringify(await exportJWK(secret))), /shared secret \(kty "oct"\)/],
          [write("private.jwk", JSON.stringify(await exportJWK(es256.privateKey))), /private key \(it has "d"\)/],
          [write("empty.jwks", JSON.stringify({ keys: [] })), /JWK Set with no key that verifies signatures/],
          [write("broken.json", "{ nope"), /is not valid JSON/],
          [write("other.json", JSON.stringify({ hello: "world" })), /neither a JWK .* nor a JWK Set/],
        ];
        for (const [file, what] of cases) {
          const e = await configError(() => Authenticator.create({ mtls: false, jwt: jwtConfig([pemFile, file]) }));
          expect(e.message).to.contain(`--jwt-keys`).and.contain(file);
          expect(e.message).to.match(what);
        }
      } finally {
        certs.remove();
      }
      expect((await configError(() => Authenticator.create({ mtls: false, jwt: jwtConfig([]) }))).message).to.contain("--jwt-keys: no key files");
    });
  });

  describe("client certificates", () => {
    let certs: Certs;
    let alice: ClientCert;
    let bob: ClientCert;
    let current: Authenticator;
    let strict: http2.Http2SecureServer;
    let lenient: http2.Http2SecureServer;
    let sessions: http2.ClientHttp2Session[] = [];
    /** Every principal the servers answered, as the authenticator returned it. */
    let seen: Principal[] = [];

    /** A TLS server like fencekeeper's: HTTP/2 and HTTP/1.1 on one port, answering the caller as JSON. */
    const serve = async (rejectUnauthorized: boolean) => {
      const server = http2.createSecureServer(
        {
          allowHTTP1: true,
          requestCert: true,
          rejectUnauthorized,
          ca: readFileSync(certs.ca),
          cert: readFileSync(certs.serverCert),
          key: readFileSync(certs.serverKey),
        },
        async (req, res) => {
          try {
            const principal = await current.authenticate(req.headers.authorization, req.socket);
            seen.push(principal);
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ http: req.httpVersion, principal }));
          } catch (err) {
            const e = err as DomainError;
            res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ http: req.httpVersion, kind: e.kind, message: e.message }));
          }
        },
      );
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return server;
    };

    const url = (server: http2.Http2SecureServer) => `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

    interface Answer {
      status: number;
      http: string;
      principal?: Principal;
      message?: string;
    }

    /** Calls over one HTTP/2 connection, one after another. */
    const overHttp2 = async (server: http2.Http2SecureServer, who: ClientCert | undefined, calls: Record<string, string>[]) => {
      const session = http2.connect(url(server), {
        ca: readFileSync(certs.ca),
        ...(who && { cert: readFileSync(who.cert), key: readFileSync(who.key) }),
      });
      sessions.push(session);
      const answers: Answer[] = [];
      for (const headers of calls) {
        answers.push(
          await new Promise<Answer>((resolve, reject) => {
            const req = session.request({ ":path": "/", ...headers });
            let status = 0;
            let body = "";
            req.on("response", (h) => (status = Number(h[":status"])));
            req.setEncoding("utf8");
            req.on("data", (chunk: string) => (body += chunk));
            req.on("end", () => resolve({ status, ...JSON.parse(body) }));
            req.on("error", reject);
            req.end();
          }),
        );
      }
      session.close();
      return answers;
    };

    const overHttp1 = (server: http2.Http2SecureServer, who: ClientCert, headers: Record<string, string> = {}) =>
      new Promise<Answer>((resolve, reject) => {
        const req = https.request(
          url(server),
          { agent: false, ca: readFileSync(certs.ca), cert: readFileSync(who.cert), key: readFileSync(who.key), headers },
          (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (chunk: string) => (body += chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, ...JSON.parse(body) }));
          },
        );
        req.on("error", reject);
        req.end();
      });

    const configure = async (c: AuthenticationConfig) => {
      current = await Authenticator.create(c);
    };

    before(async () => {
      certs = makeCerts();
      alice = clientCertFor(certs, "alice", { cn: "alice's CN", uri: "spiffe://example.org/alice" });
      bob = clientCertFor(certs, "bob", { cn: "bob" });
      strict = await serve(true);
      lenient = await serve(false);
    });

    after(async () => {
      for (const s of sessions) s.destroy();
      await Promise.all([strict, lenient].map((s) => new Promise((resolve) => s.close(resolve))));
      certs.remove();
    });

    afterEach(() => {
      sessions = [];
      seen = [];
    });

    it("names an HTTP/2 caller by its certificate's URI SAN, once for all of a connection's calls", async () => {
      await configure({ mtls: true });
      expect(current.describe()).to.equal("client certificates (URI SAN, else subject CN)");
      const answers = await overHttp2(strict, alice, [{}, {}, {}]);
      for (const a of answers) {
        expect(a).to.include({ status: 200, http: "2.0" });
        expect(a.principal).to.deep.equal({ name: "spiffe://example.org/alice", via: "mtls", groups: [], claims: {} });
      }
      // Each HTTP/2 request has its own req.socket (a proxy), yet the connection's certificate was read once.
      expect(seen).to.have.length(3);
      expect(seen[1]).to.equal(seen[0]);
      expect(seen[2]).to.equal(seen[0]);
      const [again] = await overHttp2(strict, alice, [{}]);
      expect(again.principal?.name).to.equal("spiffe://example.org/alice");
      expect(seen[3]).not.to.equal(seen[0]);
    });

    it("names an HTTP/2 caller without a URI SAN by its subject CN", async () => {
      await configure({ mtls: true });
      const [a] = await overHttp2(strict, bob, [{}]);
      expect(a).to.include({ status: 200, http: "2.0" });
      expect(a.principal?.name).to.equal("bob");
    });

    it("names HTTP/1.1 callers the same way", async () => {
      await configure({ mtls: true });
      const a = await overHttp1(strict, alice);
      expect(a).to.include({ status: 200, http: "1.1" });
      expect(a.principal).to.include({ name: "spiffe://example.org/alice", via: "mtls" });
      const b = await overHttp1(strict, bob);
      expect(b.principal).to.include({ name: "bob", via: "mtls" });
    });

    it("with certificates only, ignores an Authorization header", async () => {
      await configure({ mtls: true });
      const [a] = await overHttp2(strict, bob, [{ authorization: "Bearer whatever" }]);
      expect(a.principal?.name).to.equal("bob");
    });

    it("counts only a certificate the handshake verified against the client CA", async () => {
      await configure({ mtls: true });
      const [noCert] = await overHttp2(lenient, undefined, [{}]);
      expect(noCert.status).to.equal(401);
      expect(noCert.message).to.equal("no client certificate: this server expects a client certificate signed by its client CA (mutual TLS)");
      const [foreign] = await overHttp2(lenient, { cert: certs.strangerCert, key: certs.strangerKey }, [{}]);
      expect(foreign.status).to.equal(401);
      expect(foreign.message).to.match(/^the client certificate was not accepted \(\w+\)/);
      const e = await refusal(() => current.authenticate(undefined, cleartext()));
      expect(e.message).to.contain("the connection is not TLS");
    });

    it("with tokens and certificates, a token decides alone: a bad one is refused beside a good certificate", async () => {
      await configure({ mtls: true, jwt: jwtConfig([pemFile]) });
      expect(current.describe()).to.equal(`client certificates (URI SAN, else subject CN); bearer JWTs from issuer "${ISSUER}" for audience "${AUDIENCE}" (1 key)`);
      const good = await sign(es256.privateKey, { sub: "frank" });
      const forged = await sign(stranger.privateKey, { sub: "frank" });
      const [bad, byToken, byCert] = await overHttp2(strict, alice, [
        { authorization: `Bearer ${forged}` },
        { authorization: `Bearer ${good}` },
        {},
      ]);
      expect(bad.status).to.equal(401);
      expect(bad.message).to.match(/^bearer token refused: its signature does not verify/);
      expect(byToken.principal).to.include({ name: "frank", via: "jwt" });
      expect(byCert.principal).to.include({ name: "spiffe://example.org/alice", via: "mtls" });
      const h1 = await overHttp1(strict, bob, { authorization: `Bearer ${forged}` });
      expect(h1).to.include({ status: 401, http: "1.1" });
    });

    it("with tokens and certificates, says both when neither comes", async () => {
      await configure({ mtls: true, jwt: jwtConfig([pemFile]) });
      const [a] = await overHttp2(lenient, undefined, [{}]);
      expect(a.message).to.equal(
        `no credentials: this server expects a bearer token (Authorization: Bearer <JWT> from issuer "${ISSUER}" for audience "${AUDIENCE}") or a client certificate signed by its client CA`,
      );
    });
  });
});
