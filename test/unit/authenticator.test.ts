// Who is calling: a bearer JWT, verified with real keys, or a client certificate, over real TLS connections
// (HTTP/2, where Node hands the handler a proxy of the connection's socket, and HTTP/1.1).
import { expect } from "chai";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT, base64url, exportJWK, exportPKCS8, exportSPKI, generateKeyPair, generateSecret, type CryptoKey, type JWTPayload } from "jose";
import { Authenticator, altNames, type AuthenticationConfig, type JwtConfig } from "../../server/auth/authenticator.js";
import { ANONYMOUS, type Principal } from "../../server/auth/principal.js";
import { ConfigError } from "../../server/config.js";
import { DomainError } from "../../server/domain/errors.js";
import { clientCertFor, makeCerts, type Certs, type ClientCert } from "../mesh/support/certs.js";

const ISSUER = "https://issuer.example";
const AUDIENCE = "fencekeeper";
const now = () => Math.floor(Date.now() / 1000);
const cleartext = () => new net.Socket();

interface Pair {
  publicKey: CryptoKey;
  privateKey: CryptoKey;
}

/** The refusal of a call that must be refused, sync or async. */
async function refusal(call: () => Principal | Promise<Principal>): Promise<DomainError> {
  try {
    await call();
  } catch (err) {
    expect(err).to.be.instanceOf(DomainError);
    const e = err as DomainError;
    expect(e.kind).to.equal("unauthenticated");
    expect(e.reason).to.equal("UNAUTHENTICATED");
    return e;
  }
  throw new Error("the call was accepted");
}

async function configError(f: () => Promise<unknown>): Promise<ConfigError> {
  try {
    await f();
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("no ConfigError");
}

describe("authentication", () => {
  let dir: string;
  let es256: Pair;
  let ed: Pair;
  let stranger: Pair;
  /** The ES256 key as a PEM file, and the Ed25519 key (kid "ed-1") in a JWK Set with an encryption key beside it. */
  let pemFile: string;
  let jwksFile: string;

  const jwtConfig = (keyFiles: string[], more: Partial<JwtConfig> = {}): JwtConfig => ({
    keyFiles,
    issuer: ISSUER,
    audience: AUDIENCE,
    principalClaim: "sub",
    groupsClaim: "groups",
    clockToleranceSeconds: 30,
    ...more,
  });

  /** A token as the issuer would sign it; `claims` overrides the defaults, undefined removes one. */
  const sign = (key: CryptoKey, claims: JWTPayload = {}, header: { alg: string; kid?: string } = { alg: "ES256" }) => {
    const payload: JWTPayload = { iss: ISSUER, aud: AUDIENCE, sub: "alice", exp: now() + 600, iat: now(), ...claims };
    for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
    return new SignJWT(payload).setProtectedHeader(header).sign(key);
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-jwt-"));
    es256 = await generateKeyPair("ES256", { extractable: true });
    ed = await generateKeyPair("EdDSA");
    stranger = await generateKeyPair("ES256");
    pemFile = join(dir, "es256.pem");
    writeFileSync(pemFile, await exportSPKI(es256.publicKey));
    const encryption = await generateKeyPair("RSA-OAEP-256", { modulusLength: 2048 });
    jwksFile = join(dir, "issuer.jwks.json");
    writeFileSync(
      jwksFile,
      JSON.stringify({
        keys: [
          { ...(await exportJWK(encryption.publicKey)), kid: "enc-1", use: "enc", alg: "RSA-OAEP-256" },
          { ...(await exportJWK(ed.publicKey)), kid: "ed-1", use: "sig", alg: "EdDSA" },
        ],
      }),
    );
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  describe("without configuration", () => {
    it("answers every call as anonymous, at once, whatever is sent", async () => {
      const auth = await Authenticator.create({ mtls: false });
      expect(auth.enabled).to.equal(false);
      expect(auth.authenticate(undefined, cleartext())).to.equal(ANONYMOUS);
      expect(auth.authenticate("Bearer not-even-a-jwt", cleartext())).to.equal(ANONYMOUS);
      expect(auth.describe()).to.match(/anonymous/);
    });
  });

  describe("bearer JWTs", () => {
    let auth: Authenticator;
    before(async () => {
      auth = await Authenticator.create({ mtls: false, jwt: jwtConfig([pemFile, jwksFile]) });
    });

    it("says what it takes in one line", () => {
      expect(auth.enabled).to.equal(true);
      // The JWK Set's encryption key verifies nothing: two keys, the PEM one and the Ed25519 one.
      expect(auth.describe()).to.equal(`bearer JWTs from issuer "${ISSUER}" for audience "${AUDIENCE}" (2 keys)`);
    });

    it("names the caller of a good token by its sub, with its groups and claims", async () => {
      const token = await sign(es256.privateKey, { groups: ["ops", "leases"], team: "storage" });
      const p = await auth.authenticate(`Bearer ${token}`, cleartext());
      expect(p).to.include({ name: "alice", via: "jwt" });
      expect(p.groups).to.deep.equal(["ops", "leases"]);
      expect(p.claims).to.include({ iss: ISSUER, sub: "alice", team: "storage" });
      expect(Object.isFrozen(p.claims)).to.equal(true);
    });

    it("verifies an EdDSA token with a kid against the JWK Set; one group may come as a string, none as nothing", async () => {
      const one = await sign(ed.privateKey, { sub: "bob", groups: "ops" }, { alg: "EdDSA", kid: "ed-1" });
      expect(await auth.authenticate(`bearer ${one}`, cleartext())).to.deep.include({ name: "bob", groups: ["ops"] });
      const none = await sign(ed.privateKey, { sub: "carol" }, { alg: "EdDSA", kid: "ed-1" });
      expect(await auth.authenticate(`Bearer ${none}`, cleartext())).to.deep.include({ name: "carol", groups: [] });
    });

    it("takes the name from the configured claim", async () => {
      const byEmail = await Authenticator.create({ mtls: false, jwt: jwtConfig([pemFile], { principalClaim: "email", groupsClaim: "roles" }) });
      const token = await sign(es256.privateKey, { email: "alice@example.org", roles: ["admin"] });
      expect(await byEmail.authenticate(`Bearer ${token}`, cleartext())).to.deep.include({ name: "alice@example.org", groups: ["admin"] });
    });

    it("refuses an expired token, saying when it expired, and never repeats the token", async () => {
      const exp = now() - 3600;
      const token = await sign(es256.privateKey, { exp, iat: exp - 600 });
      const e = await refusal(() => auth.authenticate(`Bearer ${token}`, cleartext()));
      expect(e.message).to.contain(`expired at ${new Date(exp * 1000).toISOString()}`);
      expect(e.metadata).to.include({ problem: "expired", expected: "bearer JWT", issuer: ISSUER, audience: AUDIENCE });
      expect(e.message + JSON.stringify(e.metadata)).not.to.contain(token.split(".")[1]);
    });

    it("refuses a token not yet valid, beyond the clock tolerance", async () => {
      const nbf = now() + 3600;
      const e = await refusal(async () => auth.authenticate(`Bearer ${await sign(es256.privateKey, { nbf })}`, cleartext()));
      expect(e.message).to.contain(`not valid before ${new Date(nbf * 1000).toISOString()}`);
      // Within the tolerance (30 s), a token a little ahead of our clock is taken.
      const p = await auth.authenticate(`Bearer ${await sign(es256.privateKey, { nbf: now() + 10 })}`, cleartext());
      expect(p.name).to.equal("alice");
    });

    it("refuses a token from another issuer, naming both", async () => {
      const e = await refusal(async () => auth.authenticate(`Bearer ${await sign(es256.privateKey, { iss: "https://elsewhere.example" })}`, cleartext()));
      expect(e.message).to.contain(`issuer "https://elsewhere.example", expected "${ISSUER}"`);
      expect(e.metadata.problem).to.equal("wrong_issuer");
    });

    it("refuses a token for another audience, and takes one whose audiences include ours", async () => {
      const e = await refusal(async () => auth.authenticate(`Bearer ${await sign(es256.privateKey, { aud: ["billing", "search"] })}`, cleartext()));
      expect(e.message).to.contain(`audience "billing", "search", not "${AUDIENCE}"`);
      expect(e.metadata.problem).to.equal("wrong_audience");
      const p = await auth.authenticate(`Bearer ${await sign(es256.privateKey, { aud: ["billing", AUDIENCE] })}`, cleartext());
      expect(p.name).to.equal("alice");
    });

    it("refuses a token signed by a key it does not have, with a kid or without", async () => {
      const forged = await refusal(async () => auth.authenticate(`Bearer ${await sign(stranger.privateKey)}`, cleartext()));
      expect(forged.message).to.match(/signature does not verify with this server's ES256 keys/);
      expect(forged.metadata.problem).to.equal("bad_signature");
      // The PEM key has no kid, so it is still tried for a token with an unknown kid.
      const unknown = await refusal(async () => auth.authenticate(`Bearer ${await sign(stranger.privateKey, {}, { alg: "ES256", kid: "k-9" })}`, cleartext()));
      expect(unknown.message).to.contain('none has kid "k-9"');
      const edUnknown = await refusal(async () => auth.authenticate(`Bearer ${await sign(ed.privateKey, {}, { alg: "EdDSA", kid: "ed-2" })}`, cleartext()));
      expect(edUnknown.message).to.contain('no key with kid "ed-2"');
      expect(edUnknown.metadata.problem).to.equal("unknown_key");
    });

    it('refuses an unsigned token ("alg": "none") and an HMAC one', async () => {
      const part = (o: object) => base64url.encode(JSON.stringify(o));
      const unsigned = `${part({ alg: "none", typ: "JWT" })}.${part({ iss: ISSUER, aud: AUDIENCE, sub: "mallory", exp: now() + 600 })}.`;
      const e = await refusal(() => auth.authenticate(`Bearer ${unsigned}`, cleartext()));
      expect(e.message).to.contain('unsigned ("alg": "none")');
      expect(e.metadata.problem).to.equal("algorithm_not_allowed");
      const secret = await generateSecret("HS256");
      const hmac = await refusal(async () => auth.authenticate(`Bearer ${await sign(secret as CryptoKey, {}, { alg: "HS256" })}`, cleartext()));
      expect(hmac.message).to.contain("shared secret (HS256)");
    });

    it("refuses a token without exp: every token must expire", async () => {
      const e = await refusal(async () => auth.authenticate(`Bearer ${await sign(es256.privateKey, { exp: undefined })}`, cleartext()));
      expect(e.message).to.contain('no "exp" claim; this server accepts only tokens that expire');
      expect(e.metadata.problem).to.equal("missing_claim");
    });

    it("refuses a token that names no caller", async () => {
      const none = await refusal(async () => auth.authenticate(`Bearer ${await sign(es256.privateKey, { sub: undefined })}`, cleartext()));
      expect(none.message).to.contain('no "sub" claim naming the caller');
      const empty = await refusal(async () => auth.authenticate(`Bearer ${await sign(es256.privateKey, { sub: "" })}`, cleartext()));
      expect(empty.message).to.contain('no "sub" claim naming the caller');
      const badGroups = await refusal(async () => auth.authenticate(`Bearer ${await sign(es256.privateKey, { groups: [1, 2] })}`, cleartext()));
      expect(badGroups.message).to.contain('"groups" claim is neither a string nor an array of strings');
    });

    it("refuses what is not a JWT", async () => {
      for (const header of ["Bearer abc", "Bearer a.b.c", "Bearer", "Bearer a.b.c.d.e"]) {
        const e = await refusal(() => auth.authenticate(header, cleartext()));
        expect(e.message).to.match(/^bearer token refused: /);
        expect(e.metadata.problem).to.equal("malformed");
      }
    });

    it("refuses another scheme, saying which one it expects, without repeating the credentials", async () => {
      const e = await refusal(() => auth.authenticate("Basic YWxpY2U6c2VjcmV0", cleartext()));
      expect(e.message).to.equal(
        `the Authorization header uses the "Basic" scheme; this server expects a bearer token (Authorization: Bearer <JWT> from issuer "${ISSUER}" for audience "${AUDIENCE}")`,
      );
      expect(e.message + JSON.stringify(e.metadata)).not.to.contain("YWxpY2U6c2VjcmV0");
    });

    it("refuses a call without credentials, saying what it expects", async () => {
      const e = await refusal(() => auth.authenticate(undefined, cleartext()));
      expect(e.message).to.equal(`no credentials: this server expects a bearer token (Authorization: Bearer <JWT> from issuer "${ISSUER}" for audience "${AUDIENCE}")`);
      expect(e.metadata).to.deep.equal({ expected: "bearer JWT", issuer: ISSUER, audience: AUDIENCE });
    });

    it("verifies a token once: its next calls are answered at once, not with a promise", async () => {
      const header = `Bearer ${await sign(es256.privateKey, { sub: "dave" })}`;
      const first = auth.authenticate(header, cleartext());
      expect(first).to.be.instanceOf(Promise);
      // Calls that come while the first is being verified wait for that verification.
      expect(auth.authenticate(header, cleartext())).to.equal(first);
      const principal = await first;
      const second = auth.authenticate(header, cleartext());
      expect(second).not.to.be.instanceOf(Promise);
      expect(second).to.equal(principal);
    });

    it("verifies a cached token again once it expires", async function () {
      this.timeout(10_000);
      const strict = await Authenticator.create({ mtls: false, jwt: jwtConfig([pemFile], { clockToleranceSeconds: 0 }) });
      const exp = now() + 2;
      const header = `Bearer ${await sign(es256.privateKey, { exp })}`;
      expect((await strict.authenticate(header, cleartext())).name).to.equal("alice");
      expect(strict.authenticate(header, cleartext())).not.to.be.instanceOf(Promise);
      await new Promise((r) => setTimeout(r, exp * 1000 - Date.now() + 1100));
      const e = await refusal(() => strict.authenticate(header, cleartext()));
      expect(e.metadata.problem).to.equal("expired");
    });
  });

  describe("key files", () => {
    it("reload() takes a new key, and forgets tokens of the old one", async () => {
      const file = join(dir, "rotating.pem");
      writeFileSync(file, await exportSPKI(es256.publicKey));
      const auth = await Authenticator.create({ mtls: false, jwt: jwtConfig([file]) });
      const old = `Bearer ${await sign(es256.privateKey)}`;
      const next = `Bearer ${await sign(stranger.privateKey, { sub: "erin" })}`;
      await auth.authenticate(old, cleartext());
      await refusal(() => auth.authenticate(next, cleartext()));

      writeFileSync(file, await exportSPKI(stranger.publicKey));
      await auth.reload();
      expect((await auth.authenticate(next, cleartext())).name).to.equal("erin");
      const e = await refusal(() => auth.authenticate(old, cleartext()));
      expect(e.metadata.problem).to.equal("bad_signature");
    });

    it("reload() keeps the keys it has when a file has gone bad", async () => {
      const file = join(dir, "breaking.pem");
      writeFileSync(file, await exportSPKI(es256.publicKey));
      const auth = await Authenticator.create({ mtls: false, jwt: jwtConfig([file]) });
      writeFileSync(file, "-----BEGIN PUBLIC KEY-----\nnot base64 at all\n-----END PUBLIC KEY-----\n");
      const e = await configError(() => auth.reload());
      expect(e.message).to.contain(`--jwt-keys: "${file}"`);
      expect((await auth.authenticate(`Bearer ${await sign(es256.privateKey)}`, cleartext())).name).to.equal("alice");
    });

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

  describe("subjectaltname", () => {
    it("reads Node's format, quoted values included", () => {
      expect(altNames("DNS:a.example, URI:spiffe://example.org/x, IP Address:127.0.0.1")).to.deep.equal([
        { type: "DNS", value: "a.example" },
        { type: "URI", value: "spiffe://example.org/x" },
        { type: "IP Address", value: "127.0.0.1" },
      ]);
      // A comma inside a value comes JSON-quoted, so it cannot start an entry of its own.
      expect(altNames('DNS:"a, URI:spiffe://evil", URI:spiffe://example.org/y')).to.deep.equal([
        { type: "DNS", value: "a, URI:spiffe://evil" },
        { type: "URI", value: "spiffe://example.org/y" },
      ]);
      expect(altNames(undefined)).to.deep.equal([]);
    });
  });
});
