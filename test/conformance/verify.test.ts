// A resource outside fencekeeper checks a token offline (docs/verifying-tokens.md): each language's
// verify function, run through its conformance client's verify subcommand, accepts a token exactly as
// fencekeeper issued it and refuses any change to it, with the keys of ListTokenKeys.
// First on tokens signed here with node:crypto over the canonical encoding written out byte by byte (so
// that the verifiers are checked against token.proto, not only against the server), then on tokens the
// server issued. scripts/setup-polyglot.sh builds the clients.
import { expect } from "chai";
import { createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { AcquireMode, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { failure, useServer, uniqueResource } from "../harness/suite.js";
import { call, CLIENTS, endCalls, type Client, type TokenJson } from "./typescript/run-clients.js";

interface KeyJson {
  key_id: string;
  algorithm?: string;
  public_key: string;
}

/** A fixed Ed25519 key from a 32-byte seed (PKCS#8 header of RFC 8410, then the seed). */
function fixedKey(seedByte: number): { privateKey: KeyObject; raw: Buffer; keyId: string } {
  const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), Buffer.alloc(32, seedByte)]);
  const privateKey = createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
  const raw = createPublicKey(privateKey).export({ format: "der", type: "spki" }).subarray(12);
  return { privateKey, raw, keyId: createHash("sha256").update(raw).digest("hex").slice(0, 16) };
}

/** Every change to a token that its signature must catch, and what verify answers to it. */
function tampered(t: TokenJson): [what: string, token: TokenJson, reason: string][] {
  const signature = Buffer.from(t.signature, "base64");
  signature[signature.length - 1] ^= 0x01;
  return [
    ["generation + 1", { ...t, generation: String(BigInt(t.generation) + 1n) }, "bad signature"],
    ["another resource", { ...t, resource: `${t.resource}-other` }, "bad signature"],
    ["another principal", { ...t, principal: `${t.principal}mallory` }, "bad signature"],
    ["another lease_id", { ...t, lease_id: String(BigInt(t.lease_id) + 1n) }, "bad signature"],
    ["one bit of the signature flipped", { ...t, signature: signature.toString("base64") }, "bad signature"],
    ["a key_id the keys do not list", { ...t, key_id: t.key_id === "0123456789abcdef" ? "fedcba9876543210" : "0123456789abcdef" }, "unknown key id"],
    ["no signature", { ...t, signature: "" }, "not signed"],
    ["no signature nor key_id", { ...t, key_id: "", signature: "" }, "not signed"],
    // The mode is signed (shared: "2"): a shared token passed off as exclusive, or the other way round.
    [t.mode ? "the mode removed" : "the mode set to shared", { ...t, mode: t.mode ? undefined : "2" }, "bad signature"],
  ];
}

describe("verifying a token offline, in every language", function () {
  this.timeout(120_000);
  const s = useServer();
  let dir: string;
  let files = 0;
  const write = (value: unknown) => {
    const file = join(dir, `${++files}.json`);
    writeFileSync(file, JSON.stringify(value));
    return file;
  };
  const verify = (client: Client, token: TokenJson, keysFile: string) =>
    call(client, "verify", { "token-json": write(token), "keys-json": keysFile });

  /** Verifies token and each tampered copy with client; returns what differs from the expected answers. */
  async function mismatches(client: Client, token: TokenJson, keysFile: string): Promise<string[]> {
    const cases: [string, TokenJson, string | undefined][] = [["the token as issued", token, undefined], ...tampered(token)];
    const answers = await Promise.all(cases.map(([, t]) => verify(client, t, keysFile)));
    return cases.flatMap(([what, , reason], i) => {
      const expected = reason ? { ok: false, reason } : { ok: true };
      return JSON.stringify(answers[i]) === JSON.stringify(expected) ? [] : [`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(answers[i])}`];
    });
  }

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-verify-"));
  });
  after(async () => {
    await endCalls();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("tokens signed here over the canonical encoding of token.proto", () => {
    const signer = fixedKey(7);
    const other = fixedKey(9);
    // 64-bit values beyond a double's 53 bits, a negative lease id, a resource of more bytes than characters.
    const fields = { resource: "orders/ü", generation: "9007199254740993", lease_id: "-7587888888888888888", principal: "spiffe://example.org/alice", key_id: signer.keyId };
    // The canonical encoding spelled out: 4-byte big-endian lengths, then UTF-8 ("ü" is 2 bytes, so
    // "orders/ü" is 9). Written here by hand, so that the verifiers are checked against token.proto.
    const canonical = Buffer.concat([
        Buffer.from("00000014", "hex"), Buffer.from("fencekeeper-token-v1"),
        Buffer.from("00000009", "hex"), Buffer.from("6f72646572732fc3bc", "hex"),
        Buffer.from("00000010", "hex"), Buffer.from("9007199254740993"),
        Buffer.from("00000014", "hex"), Buffer.from("-7587888888888888888"),
        Buffer.from("0000001a", "hex"), Buffer.from("spiffe://example.org/alice"),
        Buffer.from("00000010", "hex"), Buffer.from(signer.keyId),
    ]);
    let token: TokenJson;
    let keysFile: string;

    before(() => {
      token = { ...fields, signature: sign(null, canonical, signer.privateKey).toString("base64") };
      // The signing key second: verify picks the key by key_id, not by position.
      keysFile = write([
        { key_id: other.keyId, algorithm: "Ed25519", public_key: other.raw.toString("base64") },
        { key_id: signer.keyId, algorithm: "Ed25519", public_key: signer.raw.toString("base64") },
      ] satisfies KeyJson[]);
    });

    for (const client of CLIENTS) {
      it(`${client.title}: accepts the token as signed, refuses every change`, async () => {
        expect(await mismatches(client, token, keysFile)).to.deep.equal([]);
      });
    }

    for (const client of CLIENTS) {
      it(`${client.title}: accepts a shared token as signed (its mode's number a seventh field), refuses every change`, async () => {
        const shared = { ...fields, mode: "2", signature: sign(null, Buffer.concat([canonical, Buffer.from("00000001", "hex"), Buffer.from("2")]), signer.privateKey).toString("base64") };
        expect(await mismatches(client, shared, keysFile)).to.deep.equal([]);
      });
    }

    it("every language refuses a token signed by a key other than the one its key_id names", async () => {
      // Signed by `other`, but naming `signer`: a forger who knows a listed key id but not its private key.
      const forged = { ...fields, signature: sign(null, canonical, other.privateKey).toString("base64") };
      const answers = await Promise.all(CLIENTS.map((c) => verify(c, forged, keysFile)));
      expect(answers).to.deep.equal(CLIENTS.map(() => ({ ok: false, reason: "bad signature" })));
    });
  });

  describe("tokens the server issued, with the keys of ListTokenKeys", () => {
    let acquired: FencingToken;
    let token: TokenJson;
    let keys: KeyJson[];
    let keysFile: string;

    before(async () => {
      const resource = uniqueResource("verify");
      acquired = (await s.lease.acquire({ resource, ttl: { seconds: 30n }, holder: "verify" })).token!;
      token = {
        resource: acquired.resource,
        generation: String(acquired.generation),
        lease_id: String(acquired.leaseId),
        principal: acquired.principal,
        key_id: acquired.keyId,
        signature: Buffer.from(acquired.signature).toString("base64"),
      };
      keys = (await s.lease.listTokenKeys({})).keys.map((k) => ({ key_id: k.keyId, algorithm: k.algorithm, public_key: Buffer.from(k.publicKey).toString("base64") }));
      keysFile = write(keys);
    });

    it("the server signs the token and lists the key that signed it, as lease.proto says", () => {
      expect(token.signature, "Acquire's token carries no signature: the server does not sign tokens").to.not.equal("");
      expect(Buffer.from(token.signature, "base64")).to.have.length(64);
      expect(keys, "ListTokenKeys lists no key").to.not.be.empty;
      for (const k of keys) {
        const raw = Buffer.from(k.public_key, "base64");
        expect(k.algorithm).to.equal("Ed25519");
        expect(raw).to.have.length(32);
        expect(k.key_id, "key_id: the first 16 hex digits of the SHA-256 of the raw key").to.equal(createHash("sha256").update(raw).digest("hex").slice(0, 16));
      }
      expect(keys[0].key_id, "the key signing new tokens comes first").to.equal(token.key_id);
      expect(token.principal, "no authentication: no principal").to.equal("");
    });

    for (const client of CLIENTS) {
      it(`${client.title}: accepts the token as issued, refuses every change`, async () => {
        expect(await mismatches(client, token, keysFile)).to.deep.equal([]);
      });
    }

    it("every language accepts a shared token as issued, and refuses it without its mode", async () => {
      const t = (await s.lease.acquire({ resource: uniqueResource("verify-shared"), ttl: { seconds: 30n }, holder: "verify", mode: AcquireMode.SHARED })).token!;
      const shared: TokenJson = {
        resource: t.resource,
        generation: String(t.generation),
        lease_id: String(t.leaseId),
        principal: t.principal,
        key_id: t.keyId,
        signature: Buffer.from(t.signature).toString("base64"),
        mode: String(t.mode),
      };
      expect(shared.mode).to.equal("2");
      const answers = await Promise.all(CLIENTS.flatMap((c) => [verify(c, shared, keysFile), verify(c, { ...shared, mode: undefined }, keysFile)]));
      expect(answers).to.deep.equal(CLIENTS.flatMap(() => [{ ok: true }, { ok: false, reason: "bad signature" }]));
    });

    it("the server's store agrees: it takes the token as issued, and refuses it altered (TOKEN_SIGNATURE_INVALID)", async () => {
      const put = (t: Partial<FencingToken>, value: string) =>
        s.store.put({ resource: acquired.resource, key: "k", value: Buffer.from(value), mutation: { token: { ...acquired, ...t } } });
      const refused = await failure(put({ principal: "mallory" }, "altered"));
      expect(refused.code).to.equal(Code.InvalidArgument);
      expect(refused.findDetails(ErrorInfoSchema)[0]?.reason).to.equal("TOKEN_SIGNATURE_INVALID");
      expect((await put({}, "as issued")).commit?.fence).to.equal(acquired.generation);
    });

    for (const client of CLIENTS) {
      it(`${client.title}: fetches the keys itself (keys) and verifies with them`, async () => {
        const fetched: KeyJson[] = await call(client, "keys", { server: s.server.url });
        expect(fetched).to.deep.equal(keys);
        expect(await verify(client, token, write(fetched))).to.deep.equal({ ok: true });
      });
    }
  });
});
