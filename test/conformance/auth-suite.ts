// Every language's conformance client authenticating both ways the server takes (docs/authentication.md):
// a client certificate on a mutual-TLS server, and a bearer JWT on a cleartext loopback server (and over
// TLS). With credentials, the scenario of SCENARIO.md passes (its streams carry them too) and a token
// passed whole from one call, or one language, to another writes; without, or with credentials the server
// does not trust, the call is refused. Tokens are bound to the principal that acquired them: the same token
// from another principal is refused, and so is a token stripped of its signature or altered.
// scripts/setup-polyglot.sh builds the clients.
//
// One file per way of authenticating (auth-mtls, auth-jwt, auth-jwt-tls .test.ts), so that mocha's parallel
// mode runs the three side by side: together they are the longest part of the suite, mostly waiting on
// JVMs and TTLs.
import { expect } from "chai";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { uniqueResource } from "../harness/suite.js";
import { clientCertFor, makeCerts, type Certs } from "../operations/support/certs.js";
import { call, CLIENTS, endCalls, run, tokenFlags, type Client, type Run, type TokenJson } from "./typescript/run-clients.js";

const ISSUER = "https://issuer.fencekeeper.test";
/** The TTL of the single calls' leases: nothing renews them, and a loaded machine may take 20 s for a JVM's eight starts. */
const TTL_SECONDS = "60";
const AUDIENCE = "fencekeeper";

type Flags = Record<string, string>;

/** One way of authenticating: the server it needs, and each client's credentials and name. */
interface Mode {
  server: TestServer;
  /** The flags that authenticate client as itself. */
  credentials(client: Client): Flags;
  /** The principal the server knows client by. */
  principal(client: Client): string;
  /** The flags of a client without credentials (still trusting the server's certificate on TLS). */
  anonymous: Flags;
  /** Credentials the server must not trust. */
  untrusted: { what: string; flags(client: Client): Flags };
  /** The status codes a refused call may fail with, in client's library; undefined: any but DEADLINE_EXCEEDED. */
  refusals(client: Client): string[] | undefined;
}

/**
 * What each library makes of a TLS handshake that the server ends (TLS 1.3 alert "certificate required", or
 * "unknown CA"): a connection that failed, UNAVAILABLE. connect-es has no code for a socket error it does not
 * know and says INTERNAL or ABORTED, depending on the alert: for it, any failure but a timeout will do.
 */
const REFUSED_HANDSHAKE: Record<string, string | undefined> = { go: "UNAVAILABLE", python: "UNAVAILABLE", java: "UNAVAILABLE", "ts-grpc-js": "UNAVAILABLE" };

/** Checks answer, a call's JSON, against the codes of refusals. */
function expectRefused(what: string, answer: Record<string, unknown>, refusals: string[] | undefined): void {
  const said = `${what}: ${JSON.stringify(answer)}`;
  expect(answer.ok, said).to.equal(false);
  if (refusals) expect(refusals, `the code of ${said}`).to.include(answer.code);
  else expect(answer.code, said).to.be.a("string").and.not.equal("DEADLINE_EXCEEDED");
  if (answer.code === "UNAUTHENTICATED") expect(answer.reason).to.equal("UNAUTHENTICATED");
}

/** The titles of the ways of authenticating, one a test file. */
export type AuthMode = "mutual TLS" | "a bearer JWT on cleartext loopback" | "a bearer JWT over TLS";

/** The suite for one way of authenticating: its own etcd and servers. */
export function authenticationSuite(only: AuthMode): void {
  describe("authentication in every language's client", function () {
    this.timeout(180_000);
    let certs: Certs;
    let etcd: TestEtcd;
    let issuerKey: CryptoKey;
    let strangerKey: CryptoKey;
    const servers: TestServer[] = [];
    const serve = async (args: string[]) => {
      const server = await startServer({ etcd: etcd.endpoint, args });
      servers.push(server);
      return server;
    };
    const jwt = (subject: string, o: { key?: CryptoKey; audience?: string } = {}) =>
      new SignJWT({})
        .setProtectedHeader({ alg: "EdDSA" })
        .setSubject(subject)
        .setIssuer(ISSUER)
        .setAudience(o.audience ?? AUDIENCE)
        .setIssuedAt()
        .setExpirationTime("30m")
        .sign(o.key ?? issuerKey);
    const jwtArgs = () => ["--jwt-keys", join(certs.dir, "jwt-public.pem"), "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE];
    /** JWTs for every client, made once the keys exist: each client is a principal of its own. */
    const bearers = new Map<string, { own: string; strangers: string; otherAudience: string }>();

    before(async function () {
      this.timeout(60_000);
      certs = makeCerts();
      etcd = await startEtcd();
      const pair = await generateKeyPair("EdDSA", { crv: "Ed25519" });
      issuerKey = pair.privateKey;
      strangerKey = (await generateKeyPair("EdDSA", { crv: "Ed25519" })).privateKey;
      writeFileSync(join(certs.dir, "jwt-public.pem"), await exportSPKI(pair.publicKey));
      for (const c of CLIENTS) {
        const subject = `jwt-${c.name}`;
        bearers.set(c.name, { own: await jwt(subject), strangers: await jwt(subject, { key: strangerKey }), otherAudience: await jwt(subject, { audience: "another-service" }) });
      }
    });
    after(async function () {
      this.timeout(30_000);
      await endCalls();
      await Promise.all(servers.map((s) => s.stop()));
      await etcd?.destroy();
      certs?.remove();
    });

    // full: also the scenario and the ring across languages, which take longest.
    const modes: { title: string; full: boolean; start: () => Promise<Mode> }[] = [
      {
        title: "mutual TLS",
        full: true,
        // Each client presents a certificate of its own: some named by their subject CN, some by a URI SAN.
        async start() {
          const server = await serve(["--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, "--tls-client-ca", certs.ca]);
          const files = new Map(
            CLIENTS.map((c, i) => {
              const identity = i % 2 === 0 ? { cn: `cert-${c.name}` } : { cn: `cert-${c.name}-cn`, uri: `spiffe://fencekeeper.test/${c.name}` };
              return [c.name, { ...clientCertFor(certs, `client-${c.name}`, identity), principal: identity.uri ?? identity.cn }];
            }),
          );
          return {
            server,
            credentials: (c) => ({ "tls-ca": certs.ca, "tls-cert": files.get(c.name)!.cert, "tls-key": files.get(c.name)!.key }),
            principal: (c) => files.get(c.name)!.principal,
            anonymous: { "tls-ca": certs.ca },
            untrusted: { what: "a certificate from another CA", flags: () => ({ "tls-ca": certs.ca, "tls-cert": certs.strangerCert, "tls-key": certs.strangerKey }) },
            // The server's TLS requires a certificate that its client CA signed: the handshake fails without
            // one, before any call. (A server that let the handshake through would answer UNAUTHENTICATED.)
            refusals: (c) => (REFUSED_HANDSHAKE[c.name] ? ["UNAUTHENTICATED", REFUSED_HANDSHAKE[c.name]!] : undefined),
          };
        },
      },
      {
        title: "a bearer JWT on cleartext loopback",
        full: true,
        start: async () => ({
          server: await serve(jwtArgs()),
          credentials: (c) => ({ bearer: bearers.get(c.name)!.own }),
          principal: (c) => `jwt-${c.name}`,
          anonymous: {},
          untrusted: { what: "a JWT signed by another key", flags: (c) => ({ bearer: bearers.get(c.name)!.strangers }) },
          refusals: () => ["UNAUTHENTICATED"],
        }),
      },
      {
        title: "a bearer JWT over TLS",
        // The TLS transport is covered by mutual TLS: here, that the bearer token goes along with it.
        full: false,
        start: async () => ({
          server: await serve(["--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, ...jwtArgs()]),
          credentials: (c) => ({ "tls-ca": certs.ca, bearer: bearers.get(c.name)!.own }),
          principal: (c) => `jwt-${c.name}`,
          anonymous: { "tls-ca": certs.ca },
          untrusted: { what: "a JWT for another audience", flags: (c) => ({ "tls-ca": certs.ca, bearer: bearers.get(c.name)!.otherAudience }) },
          refusals: () => ["UNAUTHENTICATED"],
        }),
      },
    ];

    const chosen = modes.filter((m) => m.title === only);
    if (chosen.length !== 1) throw new Error(`no way of authenticating is called "${only}"`);
    for (const { title, full, start } of chosen) {
      describe(title, () => {
        let mode: Mode;
        const scenarios = new Map<string, Promise<Run>>();
        before(async function () {
          this.timeout(60_000);
          mode = await start();
          if (!full) return;
          // The scenarios spend most of their time waiting (KeepAlive over three TTLs), so they run at once.
          for (const client of CLIENTS) {
            const resource = uniqueResource(`auth-scenario-${client.name}`);
            const started = run(client, "scenario", { server: mode.server.url, resource, ...mode.credentials(client) });
            started.catch(() => {}); // reported by the client's own test
            scenarios.set(client.name, started);
          }
        });
        after(() => Promise.all(scenarios.values()).catch(() => {}));

        for (const client of CLIENTS) {
          if (full) {
            it(`${client.title}: the scenario of SCENARIO.md, streams included`, async () => {
              const r = await scenarios.get(client.name)!;
              expect(r.code, `${client.title} scenario failed:\n${r.stdout}${r.stderr}`).to.equal(0);
              expect(r.stdout).to.match(/^ok clean up$/m);
            });
          }

          it(`${client.title}: acquire, put, get, release with the token passed whole; an unsigned or altered token is refused`, async () => {
            const server = mode.server.url;
            const as = mode.credentials(client);
            const resource = uniqueResource(`auth-${client.name}`);
            const put = (t: TokenJson, value: string) => call(client, "put", { server, resource, key: "k", value, ...tokenFlags(t), ...as });

            const a: TokenJson = await call(client, "acquire", { server, resource, holder: client.name, ttl: TTL_SECONDS, ...as });
            expect(a).to.include({ ok: true, resource, principal: mode.principal(client) });
            expect(a.key_id, "a signed token names its key").to.not.equal("");
            expect(Buffer.from(a.signature, "base64"), "a signed token").to.have.length(64);
            expect(await put(a, "v1")).to.deep.equal({ ok: true, fence: a.generation });
            expect(await call(client, "get", { server, resource, key: "k", ...as })).to.deep.equal({ ok: true, found: true, value: "v1" });

            const invalid = { ok: false, code: "INVALID_ARGUMENT", reason: "TOKEN_SIGNATURE_INVALID" };
            const [unsigned, otherPrincipal, nextGeneration] = await Promise.all([
              put({ ...a, key_id: "", signature: "" }, "unsigned"),
              put({ ...a, principal: `${a.principal}-x` }, "altered"),
              put({ ...a, generation: String(BigInt(a.generation) + 1n) }, "altered"),
            ]);
            expect(unsigned, "an unsigned token").to.deep.equal(invalid);
            expect(otherPrincipal, "another principal written in").to.deep.equal(invalid);
            expect(nextGeneration, "generation + 1").to.deep.equal(invalid);
            expect(await call(client, "get", { server, resource, key: "k", ...as }), "nothing written").to.deep.equal({ ok: true, found: true, value: "v1" });

            expect(await call(client, "release", { server, resource, ...tokenFlags(a), ...as })).to.deep.equal({ ok: true });
          });

          it(`${client.title}: without credentials, or with credentials the server does not trust, a call is refused`, async () => {
            const acquire = (flags: Flags) => call(client, "acquire", { server: mode.server.url, resource: uniqueResource(`auth-refused-${client.name}`), holder: client.name, ...flags });
            const [anonymous, untrusted] = await Promise.all([acquire(mode.anonymous), acquire(mode.untrusted.flags(client))]);
            expectRefused("no credentials", anonymous, mode.refusals(client));
            expectRefused(mode.untrusted.what, untrusted, mode.refusals(client));
          });
        }

        // The ring of SCENARIO.md, with authentication on: the token travels whole from one language to the
        // next, and only its principal may use it.
        const pairs = full ? CLIENTS.map((holder, i) => [holder, CLIENTS[(i + 1) % CLIENTS.length]] as const) : [];
        for (const [holder, writer] of pairs) {
          it(`${holder.title} acquires; ${writer.title} writes with the token as the same principal, and is refused as another`, async () => {
            const server = mode.server.url;
            const resource = uniqueResource(`auth-ring-${holder.name}-${writer.name}`);
            const asHolder = mode.credentials(holder);
            const asWriter = mode.credentials(writer);
            const a: TokenJson = await call(holder, "acquire", { server, resource, holder: holder.name, ttl: TTL_SECONDS, ...asHolder });
            const put = (as: Flags, value: string) => call(writer, "put", { server, resource, key: "k", value, ...tokenFlags(a), ...as });
            const release = (as: Flags) => call(writer, "release", { server, resource, ...tokenFlags(a), ...as });
            const notHolder = { ok: false, code: "PERMISSION_DENIED", reason: "NOT_HOLDER" };

            const value = `by ${writer.name} as ${mode.principal(holder)}`;
            expect(await put(asHolder, value), "as the holder's principal").to.deep.equal({ ok: true, fence: a.generation });
            expect(await put(asWriter, "not the holder"), "as another principal").to.deep.equal(notHolder);
            expect(await call(writer, "get", { server, resource, key: "k", ...asWriter })).to.deep.equal({ ok: true, found: true, value });
            expect(await release(asWriter), "released by another principal").to.deep.equal(notHolder);
            expect(await release(asHolder)).to.deep.equal({ ok: true });
          });
        }
      });
    }
  });
}
