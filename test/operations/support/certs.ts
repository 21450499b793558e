// A throwaway PKI for TLS tests, made with the openssl command: a CA, a server certificate for
// 127.0.0.1 and localhost, and a client certificate; plus a second CA that signed nothing we trust.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Certs {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A client certificate from another CA. */
  strangerCert: string;
  strangerKey: string;
  remove(): void;
}

export function makeCerts(): Certs {
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-certs-"));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  const ca = (name: string, cn: string) => openssl("req", "-x509", ...key, "-keyout", at(`${name}.key`), "-out", at(`${name}.pem`), "-days", "2", "-subj", `/CN=${cn}`);
  const leaf = (name: string, caName: string, cn: string, extensions: string) => {
    writeFileSync(at(`${name}.ext`), extensions);
    openssl("req", ...key, "-keyout", at(`${name}.key`), "-out", at(`${name}.csr`), "-subj", `/CN=${cn}`);
    openssl("x509", "-req", "-in", at(`${name}.csr`), "-CA", at(`${caName}.pem`), "-CAkey", at(`${caName}.key`), "-CAcreateserial", "-out", at(`${name}.pem`), "-days", "2", "-extfile", at(`${name}.ext`));
  };
  ca("ca", "fencekeeper test CA");
  ca("other-ca", "another CA");
  leaf("server", "ca", "127.0.0.1", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n");
  leaf("client", "ca", "fencekeeper test client", "extendedKeyUsage=clientAuth\n");
  leaf("stranger", "other-ca", "stranger", "extendedKeyUsage=clientAuth\n");
  return {
    dir,
    ca: at("ca.pem"),
    serverCert: at("server.pem"),
    serverKey: at("server.key"),
    clientCert: at("client.pem"),
    clientKey: at("client.key"),
    strangerCert: at("stranger.pem"),
    strangerKey: at("stranger.key"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface ClientCert {
  cert: string;
  key: string;
}

/**
 * Another client certificate from the test CA of `certs`, for a caller with its own identity: a subject CN and,
 * optionally, a URI SAN (a SPIFFE id such as spiffe://example.org/alice). Its files live in certs.dir, so
 * certs.remove() removes them too; `name` names the files and must be new.
 */
export function clientCertFor(certs: Certs, name: string, o: { cn: string; uri?: string }): ClientCert {
  if (!/^[\w-]+$/.test(name) || existsSync(join(certs.dir, `${name}.pem`))) {
    throw new Error(`clientCertFor: "${name}" must be a new file name (letters, digits, _ and -)`);
  }
  const at = (file: string) => join(certs.dir, file);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: certs.dir, stdio: ["ignore", "ignore", "pipe"] });
  writeFileSync(at(`${name}.ext`), `${o.uri ? `subjectAltName=URI:${o.uri}\n` : ""}extendedKeyUsage=clientAuth\n`);
  openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", at(`${name}.key`), "-out", at(`${name}.csr`), "-subj", `/CN=${o.cn}`);
  openssl("x509", "-req", "-in", at(`${name}.csr`), "-CA", certs.ca, "-CAkey", at("ca.key"), "-CAcreateserial", "-out", at(`${name}.pem`), "-days", "2", "-extfile", at(`${name}.ext`));
  return { cert: at(`${name}.pem`), key: at(`${name}.key`) };
}
