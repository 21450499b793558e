// A real etcd for tests: started on free loopback ports in a fresh temporary folder, removed after.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ETCD_INSTALL_HINT, etcdAvailable, startEmbeddedEtcd, type EmbeddedEtcd } from "../../server/etcd/embedded.js";

export interface TestEtcd {
  readonly endpoint: string;
  /** Stops etcd, keeping its data, so that start() brings the same cluster back on the same ports. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Freezes (SIGSTOP) and thaws (SIGCONT) the etcd process. */
  pause(): void;
  resume(): void;
  /** Stops etcd and removes its folder. */
  destroy(): Promise<void>;
}

export interface TestEtcdOptions {
  /** etcd's --quota-backend-bytes: a small one lets a test fill etcd (NOSPACE) in a few seconds. */
  quotaBackendBytes?: number;
}

export async function startEtcd(opts: TestEtcdOptions = {}): Promise<TestEtcd> {
  if (!etcdAvailable()) throw new Error(`the tests need etcd on PATH. Install it with:\n  ${ETCD_INSTALL_HINT}`);
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-etcd-"));
  let etcd: EmbeddedEtcd = await startEmbeddedEtcd({ dataDir: dir, quotaBackendBytes: opts.quotaBackendBytes });
  const { clientPort, peerPort, endpoint } = etcd;
  return {
    endpoint,
    stop: () => etcd.stop(),
    async start() {
      etcd = await startEmbeddedEtcd({ dataDir: dir, clientPort, peerPort, quotaBackendBytes: opts.quotaBackendBytes });
    },
    pause: () => etcd.process.kill("SIGSTOP"),
    resume: () => etcd.process.kill("SIGCONT"),
    async destroy() {
      etcd.process.kill("SIGCONT");
      await etcd.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
