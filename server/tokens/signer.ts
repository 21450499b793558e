// Signed tokens: every token Acquire hands out carries an Ed25519 signature over its canonical encoding
// (tokens/token.ts), so that the fenced store, and any resource outside fencekeeper, can tell a token
// fencekeeper issued from one somebody wrote. Every replica must sign with keys every other replica
// knows, so the keys live in etcd (keys.ts): the signing key, created by the first replica that needs
// one (or given to every replica by --token-signing-key), and every public key that ever signed, so
// that tokens signed before a rotation still verify. Whoever can read etcd can sign; whoever can write
// etcd can also rewrite fences, so the keys add no new trust in etcd.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { DomainError } from "../errors/errors.js";
import { canonicalToken, type Token } from "./token.js";
import type { Committer } from "../etcd/committer.js";
import { decodeSigningKey, encodeSigningKey, prefixEnd, type KeyLayout } from "../etcd/keys.js";
import { cmp, op } from "../etcd/ops.js";
import type { Reader } from "../etcd/reader.js";

export const ALGORITHM = "Ed25519";
/** Signatures already verified, each with the bytes it covers: a token used for many writes is checked once. */
const VERIFIED_CACHE = 10_000;
/** How often an unknown key id may send the signer to etcd for keys it has not seen. */
const REFRESH_MS = 2000;

export interface SignerDeps {
  keys: KeyLayout;
  committer: Committer;
  reader: Reader;
}

interface SigningKey {
  keyId: string;
  privateKey: KeyObject;
}

export interface PublicKey {
  keyId: string;
  /** The raw 32 bytes. */
  raw: Buffer;
}

/** The key id of a public key: the first 16 hex digits of the SHA-256 of its raw bytes. */
export function keyIdOf(raw: Buffer): string {
  return createHash("sha256").update(raw).digest("hex").slice(0, 16);
}

function rawOf(privateKey: KeyObject): Buffer {
  return Buffer.from(createPublicKey(privateKey).export({ format: "jwk" }).x!, "base64url");
}

function publicKeyFrom(raw: Buffer): KeyObject {
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
}

export class TokenSigner {
  private signing?: Promise<SigningKey>;
  private readonly publics = new Map<string, { raw: Buffer; key: KeyObject }>();
  private refreshed = 0;
  private refreshing?: Promise<void>;
  private readonly verified = new Map<string, Buffer>();

  /** configured: the signing key every replica was given (--token-signing-key); undefined: the one in etcd. */
  constructor(
    private readonly d: SignerDeps,
    private readonly configured?: KeyObject,
  ) {
    if (configured && configured.asymmetricKeyType !== "ed25519") {
      throw new Error(`the token signing key must be an Ed25519 private key, got ${configured.asymmetricKeyType}`);
    }
  }

  /** Resolves once a signing key is at hand (read from etcd, or made, the first time). */
  async ready(): Promise<void> {
    await this.signingKey();
  }

  /** The token, issued to its principal: with key id and signature. */
  async sign(t: Token): Promise<Token> {
    const key = await this.signingKey();
    const message = canonicalToken(t, key.keyId);
    const signature = sign(null, message, key.privateKey);
    // A signature this replica just made is valid: the Release or the writes that present it skip the
    // verification (the dearer half of Ed25519).
    this.remember(signature.toString("base64"), message);
    return { ...t, principal: t.principal ?? "", keyId: key.keyId, signature };
  }

  private remember(cacheKey: string, message: Buffer): void {
    if (this.verified.size >= VERIFIED_CACHE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(cacheKey, message);
  }

  /** Throws INVALID_ARGUMENT (TOKEN_SIGNATURE_INVALID) unless the token's signature is a valid one by a key of this deployment. */
  async verify(t: Token, what = "mutation.token"): Promise<void> {
    const signature = Buffer.from(t.signature ?? []);
    const meta = { resource: t.resource, key_id: t.keyId ?? "" };
    if (signature.length === 0) {
      throw new DomainError(
        "invalid_argument",
        `${what} is not signed: this server requires tokens exactly as Acquire returned them, with principal, key_id and signature`,
        "TOKEN_SIGNATURE_INVALID",
        meta,
      );
    }
    const message = canonicalToken(t, t.keyId ?? "");
    const cacheKey = signature.toString("base64");
    const seen = this.verified.get(cacheKey);
    if (seen && seen.equals(message)) return;
    let pub = this.publics.get(t.keyId ?? "");
    if (!pub) {
      await this.refresh();
      pub = this.publics.get(t.keyId ?? "");
    }
    if (!pub) {
      throw new DomainError(
        "invalid_argument",
        `${what} names key "${t.keyId ?? ""}", which never signed tokens here: send the token exactly as Acquire returned it`,
        "TOKEN_SIGNATURE_INVALID",
        meta,
      );
    }
    let valid = false;
    try {
      valid = signature.length === 64 && verify(null, message, pub.key, signature);
    } catch {
      valid = false;
    }
    if (!valid) {
      throw new DomainError(
        "invalid_argument",
        `${what}'s signature does not match it: the token was altered, or not issued by this deployment; send it exactly as Acquire returned it`,
        "TOKEN_SIGNATURE_INVALID",
        meta,
      );
    }
    this.remember(cacheKey, message);
  }

  /** Every public key, the signing one first. */
  async list(): Promise<PublicKey[]> {
    const signing = await this.signingKey();
    await this.refresh(true);
    const all = [...this.publics.entries()].map(([keyId, p]) => ({ keyId, raw: p.raw }));
    return all.sort((a, b) => (a.keyId === signing.keyId ? -1 : b.keyId === signing.keyId ? 1 : a.keyId.localeCompare(b.keyId)));
  }

  private signingKey(): Promise<SigningKey> {
    // A failure (etcd away) is not kept: the next call tries again.
    this.signing ??= this.loadSigningKey().catch((err) => {
      this.signing = undefined;
      throw err;
    });
    return this.signing;
  }

  private async loadSigningKey(): Promise<SigningKey> {
    const { keys, committer } = this.d;
    if (this.configured) {
      const raw = rawOf(this.configured);
      const keyId = keyIdOf(raw);
      const publicKey = keys.publicKey(keyId);
      await committer.commit("token keys", { compare: [cmp.createdAt(publicKey, 0n)], success: [op.put(publicKey, raw)], failure: [] });
      this.publics.set(keyId, { raw, key: publicKeyFrom(raw) });
      return { keyId, privateKey: this.configured };
    }
    // The first replica to get here creates the key; the others take the one it made.
    const { privateKey } = generateKeyPairSync("ed25519");
    const raw = rawOf(privateKey);
    const keyId = keyIdOf(raw);
    const pkcs8 = privateKey.export({ format: "der", type: "pkcs8" });
    const res = await committer.commit("token keys", {
      compare: [cmp.createdAt(keys.signingKey(), 0n)],
      success: [op.put(keys.signingKey(), encodeSigningKey({ keyId, pkcs8 })), op.put(keys.publicKey(keyId), raw)],
      failure: [op.get(keys.signingKey())],
    });
    if (res.succeeded) {
      this.publics.set(keyId, { raw, key: publicKeyFrom(raw) });
      return { keyId, privateKey };
    }
    const record = decodeSigningKey(res.responses[0].response_range.kvs[0]);
    const existing = createPrivateKey({ key: record.pkcs8, format: "der", type: "pkcs8" });
    const existingRaw = rawOf(existing);
    this.publics.set(record.keyId, { raw: existingRaw, key: publicKeyFrom(existingRaw) });
    return { keyId: record.keyId, privateKey: existing };
  }

  /** Reads every public key from etcd, at most once per REFRESH_MS unless forced. */
  private refresh(force = false): Promise<void> {
    if (this.refreshing) return this.refreshing;
    if (!force && Date.now() - this.refreshed < REFRESH_MS) return Promise.resolve();
    this.refreshing = (async () => {
      try {
        const prefix = this.d.keys.publicKeyPrefix();
        const res = await this.d.reader.range("token keys", { key: prefix, range_end: prefixEnd(prefix) });
        for (const kv of res.kvs) {
          const keyId = kv.key.subarray(prefix.length).toString();
          if (!this.publics.has(keyId) && kv.value.length === 32) this.publics.set(keyId, { raw: Buffer.from(kv.value), key: publicKeyFrom(kv.value) });
        }
        this.refreshed = Date.now();
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }
}
