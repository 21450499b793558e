// Who is calling: a bearer JWT, verified with real keys, and key files read and reloaded. Key files made by
// openssl and client certificates over real TLS connections: test/integration/authenticator-tls.test.ts.
import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { base64url, exportSPKI, generateSecret, type CryptoKey } from "jose";
import { Authenticator, altNames } from "../../server/auth/authenticator.js";
import { ANONYMOUS } from "../../server/auth/principal.js";
import { AUDIENCE, ISSUER, cleartext, configError, issuerKeys, jwtConfig, now, refusal, sign, type Pair } from "../harness/jwt-fixtures.js";

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
