// Signed tokens (issue 10, item 4): every token Acquire returns carries an Ed25519 signature over the
// canonical encoding of token.proto, by a key ListTokenKeys publishes; the fenced store refuses a token
// whose signature does not verify, before it touches etcd. Replicas share their keys through etcd, a
// configured key signs when given, and tokens signed before a key rotation still verify.
import { createPublicKey, generateKeyPairSync, verify, createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { clientsFor } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { failure, uniqueResource, useServer } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

/** The canonical encoding as token.proto words it, written again here from the words. */
function canonical(t: { resource: string; generation: bigint; leaseId: bigint; principal: string; keyId: string }): Buffer {
  const parts = ["fencekeeper-token-v1", t.resource, t.generation.toString(), t.leaseId.toString(), t.principal, t.keyId].map((p) => {
    const bytes = Buffer.from(p, "utf8");
    const len = Buffer.alloc(4);
    len.writeUInt32BE(bytes.length);
    return Buffer.concat([len, bytes]);
  });
  return Buffer.concat(parts);
}

function verifies(t: FencingToken, keys: { keyId: string; publicKey: Uint8Array }[]): boolean {
  const k = keys.find((x) => x.keyId === t.keyId);
  if (!k) return false;
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(k.publicKey).toString("base64url") }, format: "jwk" });
  return verify(null, canonical(t), key, Buffer.from(t.signature));
}

describe("signed tokens", function () {
  this.timeout(60_000);

  describe("one server", () => {
    const s = useServer();

    it("Acquire's token is signed by a key ListTokenKeys lists: 16 hex digits of the key's SHA-256, a 32-byte key, and a signature over the documented encoding", async () => {
      const resource = uniqueResource("signed");
      const { token } = await s.lease.acquire({ resource, ttl: ttl(10), holder: "A" });
      const { keys } = await s.lease.listTokenKeys({});
      expect(keys).to.have.length.greaterThan(0);
      expect(keys[0].algorithm).to.equal("Ed25519");
      expect(keys[0].publicKey).to.have.length(32);
      expect(keys[0].keyId).to.equal(createHash("sha256").update(keys[0].publicKey).digest("hex").slice(0, 16));
      expect(token!.keyId).to.equal(keys[0].keyId);
      expect(token!.signature).to.have.length(64);
      expect(token!.principal, "no authentication: no principal").to.equal("");
      expect(verifies(token!, keys)).to.equal(true);
      // Renewal keeps the token; a new acquisition is signed afresh.
      await s.lease.release({ token });
      const again = (await s.lease.acquire({ resource, ttl: ttl(10), holder: "A" })).token!;
      expect(again.generation > token!.generation).to.equal(true);
      expect(verifies(again, keys)).to.equal(true);
    });

    it("a signed token altered in any field, or with a key id never used, is INVALID_ARGUMENT (TOKEN_SIGNATURE_INVALID) and writes nothing", async () => {
      const resource = uniqueResource("signed");
      const { token } = await s.lease.acquire({ resource, ttl: ttl(10), holder: "A" });
      const t = token!;
      const flipped = Uint8Array.from(t.signature);
      flipped[10] ^= 1;
      const altered: [string, FencingToken][] = [
        ["generation", { ...t, generation: t.generation - 1n }],
        ["lease_id", { ...t, leaseId: t.leaseId + 1n }],
        ["principal", { ...t, principal: "mallory" }],
        ["signature", { ...t, signature: flipped }],
        ["key_id", { ...t, keyId: "0123456789abcdef" }],
        ["a short signature", { ...t, signature: t.signature.subarray(0, 32) }],
      ];
      for (const [what, bad] of altered) {
        const e = await failure(s.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token: bad } }));
        expect(e.code, `${what}: ${e.message}`).to.equal(Code.InvalidArgument);
        expect(e.findDetails(ErrorInfoSchema)[0]?.reason, what).to.equal("TOKEN_SIGNATURE_INVALID");
        expect(e.rawMessage, what).to.include("exactly as Acquire returned it");
        expect((await failure(s.lease.release({ token: bad }))).code, `release, ${what}`).to.equal(Code.InvalidArgument);
      }
      expect((await s.store.getFence({ resource })).fence, "nothing was written").to.equal(0n);
      expect((await s.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token: t } })).commit?.fence).to.equal(t.generation);
    });

    it("without authentication, a token without its signature is still taken, as before signatures (a client that keeps only resource, generation and lease id)", async () => {
      const resource = uniqueResource("signed");
      const { token } = await s.lease.acquire({ resource, ttl: ttl(10), holder: "A" });
      const bare = { resource: token!.resource, generation: token!.generation, leaseId: token!.leaseId };
      expect((await s.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token: bare } })).commit?.fence).to.equal(token!.generation);
      await s.lease.release({ token: bare });
    });
  });

  describe("replicas and keys", () => {
    let etcd: TestEtcd;
    let dir: string;
    const servers: TestServer[] = [];
    const prefix = `/fk-signed-${process.pid}/`;
    const serve = async (args: string[] = []) => {
      const server = await startServer({ etcd: etcd.endpoint, prefix, args });
      servers.push(server);
      return { server, ...clientsFor(server.url) };
    };
    const keyFile = (name: string) => {
      const file = join(dir, `${name}.pem`);
      writeFileSync(file, generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }));
      return file;
    };

    before(async function () {
      this.timeout(60_000);
      etcd = await startEtcd();
      dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-keys-"));
    });
    after(async function () {
      this.timeout(30_000);
      await Promise.all(servers.map((x) => x.stop()));
      await etcd?.destroy();
      rmSync(dir, { recursive: true, force: true });
    });

    it("two replicas on one etcd sign with one key: a token from one is taken by the other", async () => {
      const [a, b] = await Promise.all([serve(), serve()]);
      const resource = uniqueResource("replicas");
      const { token } = await a.lease.acquire({ resource, ttl: ttl(10), holder: "A" });
      expect((await b.lease.listTokenKeys({})).keys.map((k) => k.keyId)).to.deep.equal((await a.lease.listTokenKeys({})).keys.map((k) => k.keyId));
      expect((await b.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token } })).commit?.fence).to.equal(token!.generation);
      await Promise.all([a.server.stop(), b.server.stop()]);
    });

    it("--token-signing-key signs with the given key; after a rotation to another key, tokens signed by the first still write, and both keys are listed, the new one first", async () => {
      const first = await serve(["--token-signing-key", keyFile("first")]);
      const resource = uniqueResource("rotation");
      const { token } = await first.lease.acquire({ resource, ttl: ttl(30), holder: "A" });
      const before = (await first.lease.listTokenKeys({})).keys;
      expect(before[0].keyId).to.equal(token!.keyId);
      await first.server.stop();

      const second = await serve(["--token-signing-key", keyFile("second")]);
      const after = (await second.lease.listTokenKeys({})).keys;
      expect(after[0].keyId, "the new key signs").to.not.equal(token!.keyId);
      expect(after.map((k) => k.keyId)).to.include(token!.keyId);
      expect(verifies(token!, after)).to.equal(true);
      expect((await second.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token } })).commit?.fence).to.equal(token!.generation);
      const other = uniqueResource("rotation");
      expect((await second.lease.acquire({ resource: other, ttl: ttl(5), holder: "B" })).token!.keyId).to.equal(after[0].keyId);
    });
  });
});
