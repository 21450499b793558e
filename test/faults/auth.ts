// Authentication and authorization in a fault run: the replicas verify bearer JWTs (an ES256 key the run
// makes) and enforce a policy; every client sends a token naming it (sub: its name). The policy grants
// every client everything on every resource but one: DENIED_CLIENT may not write on DENIED_RESOURCES
// (it still acquires, renews and releases them), so some of its writes are refused by policy, and the
// checker asks that each such refusal be one the policy explains and that it left nothing written.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT, exportSPKI, generateKeyPair, type CryptoKey } from "jose";
import { isWrite, type Op } from "./history.js";

const ISSUER = "https://faults.fencekeeper.test";
const AUDIENCE = "fencekeeper";
/** A plain-gRPC client that does not go through a fault proxy (profile.ts names clients c0, c1, ...). */
export const DENIED_CLIENT = "c2";
export const DENIED_RESOURCES = ["res-0", "res-1"];
/** A plain-gRPC client that preempts now and then (the policy grants it the verb preempt everywhere). */
export const PREEMPTING_CLIENT = "c0";

/** Whether the run's policy denies this call: a write by DENIED_CLIENT on one of DENIED_RESOURCES. */
export const policyDenies = (op: Op): boolean => op.client === DENIED_CLIENT && isWrite(op) && DENIED_RESOURCES.includes(op.resource);

export function policyFor(clients: string[], resources: string[]): object {
  const others = clients.filter((c) => c !== DENIED_CLIENT);
  const verbs = ["acquire", "write", "read", "observe"];
  const preempt = clients.includes(PREEMPTING_CLIENT) ? [{ principals: [PREEMPTING_CLIENT], verbs: ["preempt"], resources: ["*"] }] : [];
  return {
    version: 1,
    rules: [
      ...(others.length ? [{ principals: others, verbs, resources: ["*"] }] : []),
      ...preempt,
      { principals: [DENIED_CLIENT], verbs: ["acquire", "read", "observe"], resources: ["*"] },
      { principals: [DENIED_CLIENT], verbs: ["write"], resources: resources.filter((r) => !DENIED_RESOURCES.includes(r)) },
    ],
  };
}

export class RunAuth {
  private constructor(
    private readonly dir: string,
    private readonly key: CryptoKey,
    /** The replicas' flags: JWT verification and the policy. */
    readonly serverArgs: string[],
  ) {}

  static async create(clients: string[], resources: string[]): Promise<RunAuth> {
    const dir = mkdtempSync(join(tmpdir(), "fk-faults-auth-"));
    const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
    const pem = join(dir, "issuer.pem");
    writeFileSync(pem, await exportSPKI(publicKey));
    const policy = join(dir, "policy.json");
    writeFileSync(policy, JSON.stringify(policyFor(clients, resources)));
    return new RunAuth(dir, privateKey, ["--jwt-keys", pem, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--policy", policy]);
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
