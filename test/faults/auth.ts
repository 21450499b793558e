// Authentication and authorization in a fault run: the replicas verify bearer JWTs (an ES256 key the run
// makes) and client certificates (TLS with --tls-client-ca, a CA the run makes) and enforce a policy.
// Most clients send a token naming them (sub: their name), over TLS with a certificate all of them share
// (CN jwt-transport, a principal the policy grants nothing: the token decides alone); MTLS_CLIENTS send
// no token and are named by their own certificate's CN. The policy grants
// every client everything on every resource but one: DENIED_CLIENT may not write on DENIED_RESOURCES
// (it still acquires, renews and releases them), so some of its writes are refused by policy, and the
// checker asks that each such refusal be one the policy explains and that it left nothing written.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT, exportSPKI, generateKeyPair, type CryptoKey } from "jose";
import { FLOODER } from "./flood.js";
import { isWrite, principalOf, type Op } from "./history.js";

const ISSUER = "https://faults.fencekeeper.test";
const AUDIENCE = "fencekeeper";
/** A plain-gRPC client that does not go through a fault proxy (profile.ts names clients c0, c1, ...). */
export const DENIED_CLIENT = "c2";
export const DENIED_RESOURCES = ["res-0", "res-1"];
/** Clients named by their client certificate (its CN) rather than a JWT: one SDK client, one plain-gRPC client behind a fault proxy. */
export const MTLS_CLIENTS = ["c3", "c6"];
/** The CN of the certificate the JWT clients share: no principal of the policy. */
const TRANSPORT_CN = "jwt-transport";
/** A plain-gRPC client that preempts now and then (the policy grants it the verb preempt everywhere). */
export const PREEMPTING_CLIENT = "c0";

/**
 * A plain-gRPC client that also holds the credentials of another principal (OTHER_PRINCIPAL): now and then
 * it acquires as that principal and then writes and renews under the token as itself, which the holder
 * binding refuses (PERMISSION_DENIED, NOT_HOLDER).
 */
export const IMPOSTOR_CLIENT = "c2";
export const OTHER_PRINCIPAL = "c2-other";

/** Whether the run's policy denies this call: a write by DENIED_CLIENT on one of DENIED_RESOURCES. */
export const policyDenies = (op: Op): boolean => principalOf(op) === DENIED_CLIENT && isWrite(op) && DENIED_RESOURCES.includes(op.resource);

export function policyFor(clients: string[], resources: string[]): object {
  const others = [...clients.filter((c) => c !== DENIED_CLIENT), ...(clients.includes(IMPOSTOR_CLIENT) ? [OTHER_PRINCIPAL] : [])];
  const verbs = ["acquire", "write", "read", "observe"];
  const preempt = clients.includes(PREEMPTING_CLIENT) ? [{ principals: [PREEMPTING_CLIENT], verbs: ["preempt"], resources: ["*"] }] : [];
  return {
    version: 1,
    rules: [
      ...(others.length ? [{ principals: others, verbs, resources: ["*"] }] : []),
      ...preempt,
      { principals: [DENIED_CLIENT], verbs: ["acquire", "read", "observe"], resources: ["*"] },
      // The keepalive-flood nemesis's caller: it opens a session and renews it, nothing more.
      { principals: [FLOODER], verbs: ["acquire"], resources: ["*"] },
      { principals: [DENIED_CLIENT], verbs: ["write"], resources: resources.filter((r) => !DENIED_RESOURCES.includes(r)) },
    ],
  };
}

/** A client's credentials: a JWT (or none, for MTLS_CLIENTS) and the files of its TLS client certificate. */
export interface ClientCredentials {
  bearer?: string;
  tls: { ca: string; cert: string; key: string };
}

export class RunAuth {
  private constructor(
    private readonly dir: string,
    private readonly key: CryptoKey,
    /** The replicas' flags: TLS with client certificates, JWT verification and the policy. */
    readonly serverArgs: string[],
  ) {}

  /** hosts: the addresses the replicas are reached at (their certificate names them; proxies are on 127.0.0.1). */
  static async create(clients: string[], resources: string[], hosts: string[] = []): Promise<RunAuth> {
    const dir = mkdtempSync(join(tmpdir(), "fk-faults-auth-"));
    const at = (name: string) => join(dir, name);
    const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
    const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    const leaf = (name: string, cn: string, extensions: string) => {
      writeFileSync(at(`${name}.ext`), extensions);
      openssl("req", ...key, "-keyout", at(`${name}.key`), "-out", at(`${name}.csr`), "-subj", `/CN=${cn}`);
      openssl("x509", "-req", "-in", at(`${name}.csr`), "-CA", at("ca.pem"), "-CAkey", at("ca.key"), "-CAcreateserial", "-out", at(`${name}.pem`), "-days", "2", "-extfile", at(`${name}.ext`));
    };
    openssl("req", "-x509", ...key, "-keyout", at("ca.key"), "-out", at("ca.pem"), "-days", "2", "-subj", "/CN=fencekeeper faults CA");
    const sans = [...new Set(["127.0.0.1", ...hosts])].map((h) => `IP:${h}`).join(",");
    leaf("server", "fencekeeper faults replica", `subjectAltName=${sans},DNS:localhost\nextendedKeyUsage=serverAuth\n`);
    leaf(TRANSPORT_CN, TRANSPORT_CN, "extendedKeyUsage=clientAuth\n");
    for (const c of clients.filter((x) => MTLS_CLIENTS.includes(x))) leaf(c, c, "extendedKeyUsage=clientAuth\n");
    const tls = ["--tls-cert", at("server.pem"), "--tls-key", at("server.key"), "--tls-client-ca", at("ca.pem")];
    const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
    const pem = join(dir, "issuer.pem");
    writeFileSync(pem, await exportSPKI(publicKey));
    const policy = join(dir, "policy.json");
    writeFileSync(policy, JSON.stringify(policyFor(clients, resources)));
    return new RunAuth(dir, privateKey, [...tls, "--jwt-keys", pem, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--policy", policy]);
  }

  /** What a client authenticates with: its own certificate (MTLS_CLIENTS), or a JWT over the shared one. */
  async credentials(client: string): Promise<ClientCredentials> {
    const mtls = MTLS_CLIENTS.includes(client);
    const file = (ext: string) => join(this.dir, `${mtls ? client : TRANSPORT_CN}.${ext}`);
    return { bearer: mtls ? undefined : await this.token(client), tls: { ca: join(this.dir, "ca.pem"), cert: file("pem"), key: file("key") } };
  }

  /** A token naming the client, valid for the longest run (a long profile runs up to 3 hours). */
  token(client: string): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: client, iat: now, exp: now + 6 * 3600 }).setProtectedHeader({ alg: "ES256" }).sign(this.key);
  }

  destroy(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
