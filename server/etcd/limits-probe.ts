// At start: does etcd accept the largest request this server may send? The settings say what etcd's
// limits are; etcd does not tell, so the server asks it to take a request of each limit's size, built
// so that it changes nothing.
import type { Etcd3 } from "etcd3";
import type { EtcdCalls } from "./calls.js";
import { EtcdRefused, EtcdResponseTooLarge } from "./classify.js";
import type { KeyLayout } from "./keys.js";
import { cmp, op } from "./ops.js";

export class EtcdLimitsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EtcdLimitsError";
  }
}

export async function checkEtcdLimits(etcd: Etcd3, calls: EtcdCalls, keys: KeyLayout, limits: { maxTxnOps: number; maxRequestBytes: number }): Promise<void> {
  const probe = keys.limitsProbeKey();
  const refused = (err: unknown) => err instanceof EtcdRefused || err instanceof EtcdResponseTooLarge;
  // Reads only: etcd counts operations before it looks at what they do.
  const reads = Array.from({ length: limits.maxTxnOps }, () => op.get(probe));
  try {
    await calls.run("limits probe", () => etcd.kv.txn({ compare: [], success: reads, failure: [] }));
  } catch (err) {
    if (!refused(err)) throw err;
    throw new EtcdLimitsError(
      `etcd refuses a transaction of ${limits.maxTxnOps} operations (${(err as Error).message}); ` +
        "set --etcd-max-txn-ops (FENCEKEEPER_ETCD_MAX_TXN_OPS) to etcd's --max-txn-ops",
    );
  }
  // A write whose compare fails: etcd checks the request's size, and writes nothing.
  const value = Buffer.alloc(limits.maxRequestBytes - 4096, 0x78);
  try {
    await calls.run("limits probe", () => etcd.kv.txn({ compare: [cmp.createdAt(probe, 1n)], success: [op.put(probe, value)], failure: [] }));
  } catch (err) {
    if (!refused(err)) throw err;
    throw new EtcdLimitsError(
      `etcd refuses a request of ${limits.maxRequestBytes} bytes (${(err as Error).message}); ` +
        "set --etcd-max-request-bytes (FENCEKEEPER_ETCD_MAX_REQUEST_BYTES) to etcd's --max-request-bytes",
    );
  }
}
