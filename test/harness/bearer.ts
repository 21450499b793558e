// Bearer JWTs for servers under test: an issuer whose ES256 public key (and, when given, a policy) is
// written into a folder, the server flags that trust it, tokens for a principal, and clients that send
// them. What every test of authentication by JWT (and every bench that needs principals) starts from.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, type GrpcTransportOptions } from "@connectrpc/connect-node";
import { exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";

export const TEST_ISSUER = "https://issuer.test";
export const TEST_AUDIENCE = "fencekeeper";

export interface BearerClients {
  lease: Client<typeof LeaseService>;
  store: Client<typeof FencedStoreService>;
  /** Their connection, for clients of other services on it. */
  transport: Transport;
}

/** Sends `authorization: Bearer <token>` with every call; nothing without a token. */
export const bearer =
  (token: string | undefined): Interceptor =>
  (next) =>
  (req) => {
    if (token) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };

export class TestIssuer {
  private constructor(
    readonly privateKey: CryptoKey,
    /** The public key's PEM file, which --jwt-keys names. */
    readonly keyFile: string,
    /** The policy file, when one was given. */
    readonly policyFile: string | undefined,
  ) {}

  /** An issuer whose key (and policy, as JSON) are written into dir. */
  static async create(dir: string, o: { policy?: unknown } = {}): Promise<TestIssuer> {
    const pair = await generateKeyPair("ES256");
    const keyFile = join(dir, "jwt.pem");
    writeFileSync(keyFile, await exportSPKI(pair.publicKey));
    let policyFile: string | undefined;
    if (o.policy !== undefined) {
      policyFile = join(dir, "policy.json");
      writeFileSync(policyFile, JSON.stringify(o.policy));
    }
    return new TestIssuer(pair.privateKey, keyFile, policyFile);
  }

  /** The server flags that trust this issuer, and its policy. */
  get args(): string[] {
    return [...this.jwtArgs, ...(this.policyFile ? ["--policy", this.policyFile] : [])];
  }

  /** The server flags that trust this issuer, without its policy: every principal may do everything. */
  get jwtArgs(): string[] {
    return ["--jwt-keys", this.keyFile, "--jwt-issuer", TEST_ISSUER, "--jwt-audience", TEST_AUDIENCE];
  }

  /**
   * A token for principal sub, in groups, that expires after `expires` (jose's time span, or seconds since
   * the epoch); `issuer` names another issuer than the one the server trusts.
   */
  token(sub: string, o: { groups?: string[]; expires?: string | number; issuer?: string } = {}): Promise<string> {
    return new SignJWT({ groups: o.groups ?? [] })
      .setProtectedHeader({ alg: "ES256" })
      .setSubject(sub)
      .setIssuer(o.issuer ?? TEST_ISSUER)
      .setAudience(TEST_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(o.expires ?? "10m")
      .sign(this.privateKey);
  }

  /** Clients of the server at url, on a connection of their own, sending token (none: unauthenticated). */
  static clients(url: string, token: string | undefined, transport: Partial<GrpcTransportOptions> = {}): BearerClients {
    const t = createGrpcTransport({ baseUrl: url, ...transport, interceptors: [bearer(token), ...(transport.interceptors ?? [])] });
    return { lease: createClient(LeaseService, t), store: createClient(FencedStoreService, t), transport: t };
  }

  /** Clients of the server at url, as principal sub. */
  async as(url: string, sub: string, o: { groups?: string[] } = {}): Promise<BearerClients> {
    return TestIssuer.clients(url, await this.token(sub, o));
  }
}
