// What the authenticator's tests share: an issuer's keys (an ES256 key as a PEM file, an Ed25519 key in a
// JWK Set beside an encryption key, and a stranger's key), tokens signed as the issuer would, and the
// refusals they expect. Pure: no process, no socket (test/unit and test/integration both use it).
import net from "node:net";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { expect } from "chai";
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type CryptoKey, type JWTPayload } from "jose";
import type { JwtConfig } from "../../server/auth/authentication-config.js";
import type { Principal } from "../../server/auth/principal.js";
import { ConfigError } from "../../server/errors/config-error.js";
import { DomainError } from "../../server/errors/errors.js";

export const ISSUER = "https://issuer.example";
export const AUDIENCE = "fencekeeper";
export const now = () => Math.floor(Date.now() / 1000);
export const cleartext = () => new net.Socket();

export interface Pair {
  publicKey: CryptoKey;
  privateKey: CryptoKey;
}

/** The issuer's keys, written into dir. */
export interface IssuerKeys {
  es256: Pair;
  ed: Pair;
  stranger: Pair;
  /** The ES256 key as a PEM file. */
  pemFile: string;
  /** The Ed25519 key (kid "ed-1") in a JWK Set with an encryption key beside it. */
  jwksFile: string;
}

export async function issuerKeys(dir: string): Promise<IssuerKeys> {
  const es256 = await generateKeyPair("ES256", { extractable: true });
  const ed = await generateKeyPair("EdDSA");
  const stranger = await generateKeyPair("ES256");
  const pemFile = join(dir, "es256.pem");
  writeFileSync(pemFile, await exportSPKI(es256.publicKey));
  const encryption = await generateKeyPair("RSA-OAEP-256", { modulusLength: 2048 });
  const jwksFile = join(dir, "issuer.jwks.json");
  writeFileSync(
    jwksFile,
    JSON.stringify({
      keys: [
        { ...(await exportJWK(encryption.publicKey)), kid: "enc-1", use: "enc", alg: "RSA-OAEP-256" },
        { ...(await exportJWK(ed.publicKey)), kid: "ed-1", use: "sig", alg: "EdDSA" },
      ],
    }),
  );
  return { es256, ed, stranger, pemFile, jwksFile };
}

export const jwtConfig = (keyFiles: string[], more: Partial<JwtConfig> = {}): JwtConfig => ({
  keyFiles,
  issuer: ISSUER,
  audience: AUDIENCE,
  principalClaim: "sub",
  groupsClaim: "groups",
  clockToleranceSeconds: 30,
  ...more,
});

/** A token as the issuer would sign it; `claims` overrides the defaults, undefined removes one. */
export const sign = (key: CryptoKey, claims: JWTPayload = {}, header: { alg: string; kid?: string } = { alg: "ES256" }) => {
  const payload: JWTPayload = { iss: ISSUER, aud: AUDIENCE, sub: "alice", exp: now() + 600, iat: now(), ...claims };
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
  return new SignJWT(payload).setProtectedHeader(header).sign(key);
};

/** The refusal of a call that must be refused, sync or async. */
export async function refusal(call: () => Principal | Promise<Principal>): Promise<DomainError> {
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

export async function configError(f: () => Promise<unknown>): Promise<ConfigError> {
  try {
    await f();
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("no ConfigError");
}
