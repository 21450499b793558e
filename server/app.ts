// Wiring: from a configuration and an etcd connection to the routes of both services.
import type { ConnectRouter } from "@connectrpc/connect";
import type { Etcd3 } from "etcd3";
import type { Logger } from "pino";
import { FencedStoreService } from "../gen/ts/fencekeeper/v1/store_pb.js";
import { LeaseService } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { leaseService } from "./api/lease-service.js";
import { storeService } from "./api/store-service.js";
import { DEFAULT_LIMITS, type Limits } from "./domain/limits.js";
import { Committer } from "./etcd/committer.js";
import { KeyLayout } from "./etcd/keys.js";
import { Leases } from "./etcd/leases.js";
import { Reader } from "./etcd/reader.js";
import { LeaseCoordinator } from "./lease/coordinator.js";
import { FencedStore } from "./store/fenced-store.js";
import { IdempotencyLeases } from "./store/idempotency.js";

export interface AppOptions {
  etcd: Etcd3;
  prefix: string;
  limits?: Partial<Limits>;
  etcdTimeoutMs: number;
  log: Logger;
}

export interface App {
  routes(router: ConnectRouter): void;
  /** Resolves when etcd answers a linearizable read (which needs a quorum) under the prefix; for health. */
  pingEtcd(): Promise<void>;
  close(): void;
}

export function createApp(o: AppOptions): App {
  const limits: Limits = { ...DEFAULT_LIMITS, ...o.limits };
  const keys = new KeyLayout(o.prefix);
  const committer = new Committer(o.etcd);
  const reader = new Reader(o.etcd);
  const leases = new Leases(o.etcd, o.etcdTimeoutMs);
  const coordinator = new LeaseCoordinator({ keys, committer, reader, leases, limits });
  const store = new FencedStore({
    keys,
    committer,
    reader,
    idempotency: new IdempotencyLeases(leases, limits.idempotencyTtlSeconds),
    limits,
  });
  return {
    routes(router) {
      router.service(LeaseService, leaseService(coordinator, o.log));
      router.service(FencedStoreService, storeService(store, o.log));
    },
    async pingEtcd() {
      await reader.range("health probe", { key: Buffer.from(o.prefix), count_only: true });
    },
    close() {
      leases.close();
    },
  };
}
