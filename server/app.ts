// Wiring: from a configuration and an etcd connection to the routes of both services.
import type { KeyObject } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import type { Etcd3 } from "etcd3";
import type { Logger } from "pino";
import { FencedStoreService } from "../gen/ts/fencekeeper/v1/store_pb.js";
import { LeaseService } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { leaseService } from "./api/lease-service.js";
import type { Access } from "./auth/access.js";
import { KeepAlivePace, type PaceSettings } from "./budgets/keepalive-pace.js";
import { LoadGauge } from "./budgets/load-gauge.js";
import { CallerPresence } from "./budgets/presence.js";
import { Ledger, type LedgerSettings } from "./budgets/ledger.js";
import { checkTable } from "./budgets/table.js";
import { PreemptionPace } from "./budgets/preemption-pace.js";
import { TokenChecks } from "./tokens/checks.js";
import { TokenSigner } from "./tokens/signer.js";
import { storeService } from "./api/store-service.js";
import { DomainEvents } from "./events/events.js";
import { DEFAULT_LIMITS, type Limits } from "./validation/limits.js";
import { DEFAULT_ANSWER_BUDGET, type AnswerBudget } from "./answers/budget.js";
import { EtcdCalls, type EtcdCallObserver } from "./etcd/calls.js";
import { Committer } from "./etcd/committer.js";
import { startCompactor } from "./etcd/compactor.js";
import { KeyLayout } from "./etcd/keys.js";
import { Leases } from "./etcd/leases.js";
import { etcdOutOfSpace } from "./etcd/alarms.js";
import { checkEtcdLimits } from "./etcd/limits-probe.js";
import { Reader } from "./etcd/reader.js";
import type { EtcdState } from "./health/etcd-probe.js";
import { LeaseCoordinator } from "./lease/coordinator.js";
import { PreemptedLeases } from "./lease/preemption.js";
import { FencedStore } from "./store/fenced-store.js";
import { IdempotencyLeases } from "./store/idempotency.js";
import { Authorization, checkRules } from "./rpc/authorization.js";
import { handlers } from "./rpc/pipeline.js";

export interface AppOptions {
  etcd: Etcd3;
  /** Who may do what: authentication, the policy, holder binding. */
  access: Access;
  /** Per-caller budgets kept on this replica (server/budgets/ledger.ts), and KeepAlive's pace. */
  callerCaps: Omit<LedgerSettings, "historyBytesPerSecond"> & Partial<LedgerSettings> & PaceSettings;
  /** The key that signs tokens (--token-signing-key); undefined: one kept in etcd, shared by every replica. */
  tokenSigningKey?: KeyObject;
  prefix: string;
  limits?: Partial<Limits>;
  /** What one answer may weigh, and what streams may keep for slow readers (answers/budget.ts). */
  answers?: AnswerBudget;
  /** What etcd accepts in one request. */
  etcdLimits: { maxTxnOps: number; maxRequestBytes: number };
  etcdTimeoutMs: number;
  log: Logger;
  /** Told of every etcd call (the metrics). */
  observeEtcd?: EtcdCallObserver;
  /** etcd's history compaction (compactor.ts); unset or intervalMs 0: none. */
  compaction?: { intervalMs: number; retention: number };
}

export interface App {
  /** What the coordinator and the store did: the metrics and the ownership log listen. */
  readonly events: DomainEvents;
  readonly coordinator: LeaseCoordinator;
  readonly store: FencedStore;
  /** Both services with their handlers (authorized, failures mapped): for connect's router, and for the unary fast path. */
  readonly services: [DescService, Record<string, unknown>][];
  routes(router: ConnectRouter): void;
  /** Resolves when etcd answers a linearizable read (which needs a quorum) under the prefix, saying whether it is out of space (when etcd tells); for health. */
  pingEtcd(): Promise<EtcdState>;
  /** Checks that etcd accepts the largest request the server may send; throws saying which setting to change. */
  checkEtcdLimits(): Promise<void>;
  close(): void;
}

/** Most etcd write requests in flight at once: more transactions wait and go out packed together. */
const COMMITS_IN_FLIGHT = 2;

export function createApp(o: AppOptions): App {
  const limits: Limits = { ...DEFAULT_LIMITS, ...o.limits };
  const answers = o.answers ?? DEFAULT_ANSWER_BUDGET;
  const events = new DomainEvents((err, event) => o.log.error({ err, event: event.type }, "a listener of domain events failed"));
  const keys = new KeyLayout(o.prefix);
  const calls = new EtcdCalls(o.observeEtcd);
  // Leave room for what an estimate of a request's size does not count (field tags, lengths).
  const maxRequestBytes = Math.floor(o.etcdLimits.maxRequestBytes * 0.9);
  const committer = new Committer(o.etcd, calls, { maxTxnOps: o.etcdLimits.maxTxnOps, maxRequestBytes, maxInFlight: COMMITS_IN_FLIGHT });
  const reader = new Reader(o.etcd, calls);
  const leases = new Leases(o.etcd, calls, o.etcdTimeoutMs);
  const signer = new TokenSigner({ keys, committer, reader }, o.tokenSigningKey);
  // With authentication on, a token must prove whose it is: only signed tokens are taken.
  const tokens = new TokenChecks(signer, o.access.enabled);
  const preempted = new PreemptedLeases(keys, reader, o.log);
  preempted.start();
  const preemptionPace = new PreemptionPace(limits.preemptionIntervalMs);
  const coordinator = new LeaseCoordinator({ keys, committer, reader, leases, limits, signer, tokens, events, preempted, preemptionPace });
  const store = new FencedStore({ keys, tokens, committer, reader, idempotency: new IdempotencyLeases(leases, limits.idempotencyTtlSeconds), limits, events, maxPageBytes: answers.maxAnswerBytes });
  // The handlers as every call reaches them: authorized from one table, failures mapped (server/rpc).
  checkRules([LeaseService, FencedStoreService]);
  checkTable([LeaseService, FencedStoreService]);
  const authorization = new Authorization(o.access);
  // KeepAlive's message budgets shrink while the event loop is saturated (budgets/load-gauge.ts).
  const loadGauge = new LoadGauge();
  const presence = new CallerPresence();
  const ledger = new Ledger({ historyBytesPerSecond: 0, ...o.callerCaps }, (values) => o.access.callerKey({ values }), { seen: (values) => presence.seen(o.access.partyKey({ values })) });
  const lease = handlers(LeaseService, leaseService(coordinator, o.access, new KeepAlivePace(o.callerCaps, loadGauge, presence), answers, ledger, o.log), authorization, ledger);
  const fenced = handlers(FencedStoreService, storeService(store, o.access, o.log), authorization, ledger);
  const compactor = o.compaction && startCompactor(o.etcd, calls, { ...o.compaction, probeKey: Buffer.from(o.prefix) }, o.log);
  return {
    events,
    coordinator,
    store,
    services: [
      [LeaseService, lease],
      [FencedStoreService, fenced],
    ],
    routes(router) {
      router.service(LeaseService, lease);
      router.service(FencedStoreService, fenced);
    },
    async pingEtcd() {
      await reader.range("health probe", { key: Buffer.from(o.prefix), count_only: true });
      // An etcd that answers reads but not the alarm query (a user without the permission) is not
      // reported down for it: the probe then tells nothing about space.
      return { outOfSpace: await etcdOutOfSpace(o.etcd, calls).catch(() => undefined) };
    },
    checkEtcdLimits: () => checkEtcdLimits(o.etcd, calls, keys, o.etcdLimits),
    close() {
      compactor?.stop();
      preempted.stop();
      loadGauge.stop();
      leases.close();
    },
  };
}
