// The keys that verify bearer JWTs, read from the files of --jwt-keys: PEM public keys (SPKI), JWKs and
// JWK Sets. Each key is checked and imported once for every algorithm it may verify, so that verifying a
// token only looks one up. What a key may verify follows from the key itself, never from the token: a
// token cannot talk the server into "none", or into HMAC with a public key as the shared secret.
import { readFile } from "node:fs/promises";
import { createPublicKey, type JsonWebKey, type KeyObject } from "node:crypto";
import { importJWK, type CryptoKey, type JWK } from "jose";
import { ConfigError } from "../errors/config-error.js";

const FLAG = "--jwt-keys";

/** Below this, RSA signatures can be forged with means within reach; jose refuses them too, at every call. */
const MIN_RSA_BITS = 2048;

/** The curves we verify, and the one algorithm each implies (RFC 7518: ES256 is P-256 with SHA-256, and so on). */
const EC_ALGORITHMS: Record<string, string> = { prime256v1: "ES256", secp384r1: "ES384" };

/** A key as read from a file: who it is (kid) and what it may verify. */
export interface VerificationKey {
  readonly file: string;
  /** The JWK's "kid"; undefined for a PEM key, which has none. */
  readonly kid?: string;
  /** A CryptoKey for each algorithm this key may verify. */
  readonly byAlgorithm: ReadonlyMap<string, CryptoKey>;
}

/** The keys that may have signed a token, given its header. */
export interface Candidates {
  readonly keys: CryptoKey[];
  /** False when the token names a kid that no key has (the keys returned are then those without a kid). */
  readonly kidKnown: boolean;
}

export class JwtKeys {
  /** Every algorithm some key verifies, for "the server accepts ..." and for refusing the rest before any work. */
  readonly algorithms: ReadonlySet<string>;

  private constructor(readonly keys: readonly VerificationKey[]) {
    this.algorithms = new Set(keys.flatMap((k) => [...k.byAlgorithm.keys()]));
  }

  /** Reads and checks every file; the first bad one is a ConfigError naming it and what is wrong. */
  static async load(files: readonly string[]): Promise<JwtKeys> {
    if (files.length === 0) throw new ConfigError(`${FLAG}: no key files given; bearer JWTs need at least one verification key`);
    const keys: VerificationKey[] = [];
    for (const file of files) keys.push(...(await readKeyFile(file)));
    return new JwtKeys(keys);
  }

  get size(): number {
    return this.keys.length;
  }

  /**
   * The keys that may have signed a token with this header. A token's kid picks the keys with that kid; when
   * none has it, the keys without a kid (PEM keys) still may have signed it: an issuer's tokens carry a kid
   * even when the operator gave us its key as PEM.
   */
  candidates(alg: string, kid: string | undefined): Candidates {
    const usable = this.keys.filter((k) => k.byAlgorithm.has(alg));
    const named = kid === undefined ? [] : usable.filter((k) => k.kid === kid);
    const kidKnown = kid === undefined || named.length > 0;
    const chosen = kid === undefined ? usable : kidKnown ? named : usable.filter((k) => k.kid === undefined);
    return { keys: chosen.map((k) => k.byAlgorithm.get(alg)!), kidKnown };
  }
}

const problem = (file: string, what: string) => new ConfigError(`${FLAG}: "${file}" ${what}`);

async function readKeyFile(file: string): Promise<VerificationKey[]> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new ConfigError(`${FLAG}: cannot read "${file}" (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) return fromJson(file, trimmed);
  if (trimmed.includes("-----BEGIN ")) return fromPem(file, trimmed);
  throw problem(file, "is neither a PEM public key nor a JWK or JWK Set (JSON)");
}

async function fromPem(file: string, text: string): Promise<VerificationKey[]> {
  const blocks = [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g)];
  if (blocks.length === 0) throw problem(file, "has a PEM header but no complete PEM block");
  const keys: VerificationKey[] = [];
  for (const [pem, label] of blocks) {
    if (label.includes("PRIVATE KEY")) {
      throw problem(file, `holds a private key (${label}); give the server only the public key (openssl pkey -in <file> -pubout)`);
    }
    if (label === "CERTIFICATE") {
      throw problem(file, "holds a certificate, not a public key; extract its key with openssl x509 -in <file> -pubkey -noout");
    }
    if (label !== "PUBLIC KEY") throw problem(file, `holds a "${label}" PEM block; expected "PUBLIC KEY" (SPKI)`);
    let key: KeyObject;
    try {
      key = createPublicKey(pem);
    } catch (err) {
      throw problem(file, `holds a PUBLIC KEY block that is not a valid key (${(err as Error).message})`);
    }
    const algorithms = algorithmsOf(key);
    if (typeof algorithms === "string") throw problem(file, `holds a key that ${algorithms}`);
    keys.push({ file, byAlgorithm: await importFor(key, algorithms) });
  }
  return keys;
}

async function fromJson(file: string, text: string): Promise<VerificationKey[]> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw problem(file, `is not valid JSON (${(err as Error).message})`);
  }
  const o = json as Record<string, unknown>;
  if (Array.isArray(o.keys)) {
    // An issuer's published JWK Set may hold encryption keys beside its signing keys: those are skipped,
    // so that the operator can give us the set as published. Private or shared keys are still refused.
    const keys: VerificationKey[] = [];
    const skipped: string[] = [];
    for (const [i, jwk] of o.keys.entries()) {
      const name = `key ${i}${isObject(jwk) && typeof jwk.kid === "string" ? ` (kid "${jwk.kid}")` : ""}`;
      const read = await fromJwk(file, name, jwk);
      if (typeof read === "string") skipped.push(`${name} ${read}`);
      else keys.push(read);
    }
    if (keys.length === 0) {
      throw problem(file, `is a JWK Set with no key that verifies signatures${skipped.length ? `: ${skipped.join("; ")}` : " (its \"keys\" is empty)"}`);
    }
    return keys;
  }
  if (typeof o.kty === "string") {
    const read = await fromJwk(file, "the key", o);
    if (typeof read === "string") throw problem(file, `holds a JWK that ${read}`);
    return [read];
  }
  throw problem(file, 'is JSON but neither a JWK (with "kty") nor a JWK Set (with "keys": [...])');
}

/**
 * One JWK: the key, or why it verifies no signature (a string). A private or shared key is a ConfigError
 * however it comes: a secret in a file of public keys is a mistake the operator must hear about.
 */
async function fromJwk(file: string, name: string, jwk: unknown): Promise<VerificationKey | string> {
  if (!isObject(jwk) || typeof jwk.kty !== "string") return 'is not a JWK (an object with "kty")';
  if (jwk.kty === "oct") {
    throw problem(file, `${name} is a shared secret (kty "oct"): this server verifies JWTs only with public keys, never with HMAC`);
  }
  if ("d" in jwk) throw problem(file, `${name} is a private key (it has "d"); give the server only the public part`);
  if (jwk.use !== undefined && jwk.use !== "sig") return `is for "${String(jwk.use)}", not signatures`;
  if (Array.isArray(jwk.key_ops) && !jwk.key_ops.includes("verify")) return 'has "key_ops" without "verify"';
  let key: KeyObject;
  try {
    key = createPublicKey({ key: jwk as JsonWebKey, format: "jwk" });
  } catch (err) {
    return `is not a valid ${jwk.kty} key (${(err as Error).message})`;
  }
  let algorithms = algorithmsOf(key);
  if (typeof algorithms === "string") return algorithms;
  if (jwk.alg !== undefined) {
    if (typeof jwk.alg !== "string" || !algorithms.includes(jwk.alg)) {
      return `says "alg": ${JSON.stringify(jwk.alg)}, which its key cannot verify here (it can: ${algorithms.join(", ")})`;
    }
    // EdDSA and Ed25519 name the same signatures (RFC 9864); either in the JWK allows both in tokens.
    if (key.asymmetricKeyType !== "ed25519") algorithms = [jwk.alg];
  }
  const kid = typeof jwk.kid === "string" ? jwk.kid : undefined;
  return { file, kid, byAlgorithm: await importFor(key, algorithms) };
}

/** The algorithms a public key may verify, or why it verifies none (a string). */
function algorithmsOf(key: KeyObject): string[] | string {
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case "rsa": {
      const bits = details.modulusLength ?? 0;
      if (bits < MIN_RSA_BITS) return `is RSA with ${bits} bits; use at least ${MIN_RSA_BITS}`;
      return ["RS256", "PS256"];
    }
    case "ec": {
      const alg = EC_ALGORITHMS[details.namedCurve ?? ""];
      return alg ? [alg] : `is on curve ${details.namedCurve}; supported: P-256 (ES256), P-384 (ES384)`;
    }
    case "ed25519":
      return ["EdDSA", "Ed25519"];
    default:
      return `is of type ${key.asymmetricKeyType}; supported: RSA (RS256, PS256), EC P-256 (ES256) and P-384 (ES384), Ed25519 (EdDSA)`;
  }
}

async function importFor(key: KeyObject, algorithms: string[]): Promise<Map<string, CryptoKey>> {
  // Node has checked the key already (curve points, modulus); jose makes the WebCrypto key per algorithm.
  const jwk = key.export({ format: "jwk" }) as JWK;
  const byAlgorithm = new Map<string, CryptoKey>();
  for (const alg of algorithms) byAlgorithm.set(alg, (await importJWK(jwk, alg)) as CryptoKey);
  return byAlgorithm;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
