// An etcd that speaks only TLS to its clients and wants a client certificate signed by the test CA.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePorts } from "../../../server/etcd/embedded.js";
import type { Certs } from "./certs.js";

export interface TlsEtcd {
  readonly endpoint: string;
  destroy(): Promise<void>;
}

export async function startTlsEtcd(certs: Certs): Promise<TlsEtcd> {
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-tls-etcd-"));
  const [clientPort, peerPort] = await freePorts(2);
  const endpoint = `https://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const child = spawn(
    "etcd",
    [
      "--name", "tls",
      "--data-dir", join(dir, "data"),
      "--listen-client-urls", endpoint,
      "--advertise-client-urls", endpoint,
      "--listen-peer-urls", peer,
      "--initial-advertise-peer-urls", peer,
      "--initial-cluster", `tls=${peer}`,
      "--cert-file", certs.serverCert,
      "--key-file", certs.serverKey,
      "--trusted-ca-file", certs.ca,
      "--client-cert-auth",
      "--log-level", "warn",
    ],
    { stdio: "ignore" },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const tls = { ca: readFileSync(certs.ca), cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) };
  const healthy = () =>
    new Promise<boolean>((resolve) => {
      const req = https.get(`${endpoint}/health`, { ...tls, timeout: 1000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on("error", () => resolve(false));
      req.on("timeout", () => req.destroy());
    });
  const deadline = Date.now() + 20_000;
  while (!(await healthy())) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`etcd with TLS did not start on ${endpoint}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    endpoint,
    async destroy() {
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
