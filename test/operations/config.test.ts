// A bad setting stops the server at start, before it touches etcd or a port, with a message that
// names the setting: the flag, or the environment variable it came from.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { Command } from "commander";
import { serveOptions, toConfig } from "../../server/config.js";
import { makeCerts, type Certs } from "./support/certs.js";
import { runServer } from "./support/run-server.js";

interface Case {
  what: string;
  args?: string[];
  env?: Record<string, string>;
  /** Every one of these must be in the message. */
  names: string[];
}

// An etcd nobody listens on and ports of its own: a server that wrongly accepted a setting would
// start, and be killed as a failure, without getting in the way of anything else.
const SAFE = ["--listen", "127.0.0.1:0", "--metrics-listen", "off", "--etcd", "http://127.0.0.1:9"];

const cases = (certs: Certs): Case[] => [
  { what: "a TTL bound below etcd's minimum", args: ["--max-ttl", "1"], names: ["--max-ttl", "2 to 86400"] },
  { what: "an etcd timeout from the environment that is not a number", env: { FENCEKEEPER_ETCD_TIMEOUT: "fast" }, names: ["FENCEKEEPER_ETCD_TIMEOUT", "etcd-timeout"] },
  { what: "a listen address without a port", args: ["--listen", "localhost"], names: ["--listen", "host:port"] },
  { what: "a metrics address without a host", args: ["--metrics-listen", "9464"], names: ["--metrics-listen", "host:port"] },
  { what: "a reflection switch that is neither on nor off", env: { FENCEKEEPER_REFLECTION: "maybe" }, names: ["FENCEKEEPER_REFLECTION", "reflection"] },
  { what: "an unknown log level", args: ["--log-level", "loud"], names: ["--log-level", "info"] },
  { what: "a key prefix without slashes", args: ["--prefix", "fencekeeper"], names: ["--prefix"] },
  { what: "an etcd endpoint that is not a URL", args: ["--etcd", "127.0.0.1:2379"], names: ["--etcd", "http://"] },
  { what: "a grace period too long", args: ["--shutdown-grace", "3600000"], names: ["--shutdown-grace"] },
  { what: "a health probe interval of zero", args: ["--health-probe-interval", "0"], names: ["--health-probe-interval"] },
  { what: "an OTLP endpoint that is not an http(s) URL", args: ["--otlp-endpoint", "collector:4318"], names: ["--otlp-endpoint", "http://"] },
  { what: "an OTLP batch delay of zero", env: { FENCEKEEPER_OTLP_BATCH_DELAY: "0" }, names: ["FENCEKEEPER_OTLP_BATCH_DELAY", "otlp-batch-delay"] },
  { what: "an OTLP sample ratio above 1", args: ["--otlp-sample-ratio", "10"], names: ["--otlp-sample-ratio", "0 to 1"] },
  { what: "a certificate file that does not exist", args: ["--tls-cert", "/nonexistent/server.pem", "--tls-key", certs.serverKey], names: ["--tls-cert", "/nonexistent/server.pem"] },
  { what: "a certificate without its key", args: ["--tls-cert", certs.serverCert], names: ["--tls-key"] },
  { what: "a key that is not the certificate's", args: ["--tls-cert", certs.serverCert, "--tls-key", certs.clientKey], names: ["--tls-key", "--tls-cert"] },
  { what: "a client CA without a server certificate", args: ["--tls-client-ca", certs.ca], names: ["--tls-client-ca", "--tls-cert"] },
  { what: "a key file that holds no key", args: ["--tls-cert", certs.serverCert, "--tls-key", certs.ca], names: ["--tls-key"] },
  { what: "etcd TLS files with http:// endpoints", args: ["--etcd-ca", certs.ca], names: ["--etcd-ca", "https://"] },
  { what: "an etcd client certificate without its key", args: ["--etcd", "https://127.0.0.1:9", "--etcd-cert", certs.clientCert], names: ["--etcd-key"] },
  { what: "an address beyond loopback without authentication", args: ["--listen", "0.0.0.0:0"], names: ["--listen", "--allow-unauthenticated", "--jwt-keys", "--tls-client-ca"] },
  { what: "a policy without authentication", args: ["--policy", certs.ca], names: ["--policy", "--jwt-keys", "--tls-client-ca"] },
  { what: "JWT keys without an issuer", args: ["--jwt-keys", certs.ca, "--jwt-audience", "fencekeeper"], names: ["--jwt-keys", "--jwt-issuer"] },
  { what: "JWT keys without an audience", args: ["--jwt-keys", certs.ca, "--jwt-issuer", "https://issuer.example"], names: ["--jwt-audience"] },
  { what: "a JWT issuer without keys", args: ["--jwt-issuer", "https://issuer.example"], names: ["--jwt-issuer", "--jwt-keys"] },
  { what: "a JWT key file that does not exist", args: ["--jwt-keys", "/nonexistent/jwt.pem"], names: ["--jwt-keys", "/nonexistent/jwt.pem"] },
  { what: "an allowed host with a port", env: { FENCEKEEPER_ALLOWED_HOSTS: "fencekeeper,evil.example:80" }, names: ["FENCEKEEPER_ALLOWED_HOSTS", "allowed-hosts", "without ports"] },
  { what: "the metrics address equal to the listen address", args: ["--listen", "127.0.0.1:50999", "--metrics-listen", "127.0.0.1:50999"], names: ["--metrics-listen", "--listen"] },
];

/** Parses as the server does, in this process; returns what the server would print, or "" when accepted. */
function refusal(c: Case): string {
  let printed = "";
  const cmd = serveOptions(new Command("fencekeeper-server"))
    .exitOverride()
    .configureOutput({ writeErr: (text) => (printed += text), writeOut: () => undefined });
  const saved = Object.fromEntries(Object.keys(c.env ?? {}).map((k) => [k, process.env[k]]));
  Object.assign(process.env, c.env);
  try {
    cmd.parse([...SAFE, ...(c.args ?? [])], { from: "user" });
    toConfig(cmd.opts());
    return "";
  } catch (err) {
    return printed || (err as Error).message;
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe("configuration checked at start", () => {
  let certs: Certs;
  before(() => {
    certs = makeCerts();
  });
  after(() => certs?.remove());

  for (const c of cases({} as Certs)) {
    it(`refuses ${c.what}, naming it`, () => {
      const theCase = cases(certs).find((k) => k.what === c.what)!;
      const message = refusal(theCase);
      expect(message, "refused").to.not.equal("");
      for (const name of theCase.names) expect(message).to.include(name);
    });
  }

  it("docs/configuration.md has a row for every setting, with its flag and environment variable", () => {
    const rows = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8").split("\n").filter((l) => l.startsWith("| `--"));
    const options = serveOptions(new Command("fencekeeper-server")).options;
    expect(rows).to.have.length(options.length);
    for (const o of options) {
      const row = rows.find((r) => r.startsWith(`| \`${o.long} `) || r.startsWith(`| \`${o.long}\``));
      expect(row, o.long).to.be.a("string");
      expect(row).to.include(`\`${o.envVar}\``);
    }
  });

  it("the server process exits non-zero before serving, with the setting's name on stderr", async function () {
    this.timeout(30_000);
    const [flag, env, combination] = await Promise.all([
      runServer([...SAFE, "--max-ttl", "1"]),
      runServer(SAFE, { FENCEKEEPER_ETCD_TIMEOUT: "fast" }),
      runServer([...SAFE, "--tls-cert", certs.serverCert]),
    ]);
    for (const [exit, name] of [
      [flag, "--max-ttl"],
      [env, "FENCEKEEPER_ETCD_TIMEOUT"],
      [combination, "--tls-key"],
    ] as const) {
      expect(exit.code, exit.stderr).to.be.a("number").and.not.equal(0);
      expect(exit.stdout, "nothing was served").to.not.include('"msg":"serving"');
      expect(exit.stderr).to.include(name);
    }
  });

  it("starts with the same kind of settings when they are good", async function () {
    this.timeout(30_000);
    const good = { what: "good", args: ["--max-ttl", "2", "--reflection", "off", "--tls-cert", certs.serverCert, "--tls-key", certs.serverKey], names: [] };
    expect(refusal(good)).to.equal("");
    const exit = await runServer([...SAFE, ...good.args]);
    expect(exit.code, exit.stderr).to.equal(0);
    expect(exit.stdout).to.include('"msg":"serving"');
    expect(exit.stdout).to.include('"url":"https://127.0.0.1:');
  });
});
