// The ledger's table: what each call may cost its caller, one row per method, and for every `bytes` or
// `string` field of a request, the budget that counts it or the bound that caps it. As
// server/rpc/authorization.ts is the one table of method -> verb, this is the one table of method ->
// budgets: the pipeline charges a call from its row before the handler runs (ledger.ts), and the budgets
// that only etcd can decide exactly (leases, bytes per lease, bytes per resource) name where they are
// decided. A method without a row is a startup error (checkTable); test/unit/budgets-table.test.ts
// walks the descriptors, so that a method or a field (nested ones too) without a row fails before that.
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { FencedStoreService, type BatchRequest, type DeleteRequest, type PutRequest, type TxnRequest } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { LeaseService, type AcquireAllRequest, type AcquireRequest, type LeaseBatchRequest, type OpenSessionRequest, type ProclaimRequest, type ReleaseRequest } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { BudgetName } from "./budget.js";

/**
 * What one put costs in etcd's history besides its key and value: the records that go with a write (the
 * fence, the idempotency record, the issued mark, the usage key) and etcd's own bookkeeping of a revision.
 */
export const PUT_OVERHEAD_BYTES = 256;

export interface CostRow {
  /** Bytes the call writes into etcd's history at most (every put, overwrites too); none: it writes nothing. */
  history?(req: never): number;
  /** A slot the call holds while it runs: a stream, or a waiter. */
  holds?(req: never): "streams" | "waiters" | undefined;
  /** Budgets the domain decides, in etcd, in the transaction that writes (or next to it): named for the docs and tests. */
  decidedIn?: Partial<Record<BudgetName, string>>;
}

const len = (s: string | Uint8Array | undefined) => (s === undefined ? 0 : typeof s === "string" ? Buffer.byteLength(s) : s.byteLength);
const put = (...parts: (string | Uint8Array | undefined)[]) => PUT_OVERHEAD_BYTES + parts.reduce((n, p) => n + len(p), 0);
const putBytes = (r: PutRequest) => put(r.resource, r.key, r.value, r.mutation?.idempotencyKey);
const deleteBytes = (r: DeleteRequest) => put(r.resource, r.key, r.mutation?.idempotencyKey);

const LEASE_CAP = "server/lease/lease-cap.ts, in etcd: a slot key on the lease";
const LEASE_BYTES = "server/budgets/lease-bytes.ts, in etcd: a usage key on the lease";
const STORE = "server/store/fenced-store.ts, in etcd: the resource's usage key, in the write's transaction";
const CALLER_STORE = "server/store/store-payer.ts, in etcd: the payer's ledger, in the write's transaction";

export const COSTS: Record<string, CostRow> = {
  // A grant writes the owner key (or a waiter's line key, then the owner key), the issued mark and the
  // value: the value and the label count twice.
  [`${LeaseService.typeName}/Acquire`]: {
    history: (r: AcquireRequest) => 2 * put(r.resource, r.holder, r.value),
    holds: (r: AcquireRequest) => (r.wait ? "waiters" : undefined),
    decidedIn: { leases: LEASE_CAP, lease_bytes: LEASE_BYTES, preemptions: "server/lease/preemption.ts, with preempt set" },
  },
  // A batch costs what its operations would cost as single calls; each waiting operation takes a waiter of
  // its caller as a waiting Acquire does, in the handler (server/api/lease-batch.ts), one by one.
  [`${LeaseService.typeName}/LeaseBatch`]: {
    history: (r: LeaseBatchRequest) =>
      r.ops.reduce((n, o) => n + (o.op.case === "acquire" ? 2 * put(o.op.value.resource, o.op.value.holder, o.op.value.value) : o.op.case === "release" ? put(o.op.value.token?.resource) : 0), 0),
    decidedIn: { leases: LEASE_CAP, lease_bytes: LEASE_BYTES },
  },
  // All or nothing: one waiter for the whole set (taken by its handler), and each resource granted as an
  // Acquire would be.
  [`${LeaseService.typeName}/AcquireAll`]: {
    history: (r: AcquireAllRequest) => r.resources.reduce((n, resource) => n + 2 * put(resource, r.holder), 0),
    decidedIn: { leases: LEASE_CAP },
  },
  [`${LeaseService.typeName}/Proclaim`]: { history: (r: ProclaimRequest) => put(r.token?.resource, r.value), decidedIn: { lease_bytes: LEASE_BYTES } },
  [`${LeaseService.typeName}/Release`]: { history: (r: ReleaseRequest) => put(r.token?.resource) },
  [`${LeaseService.typeName}/OpenSession`]: { history: (r: OpenSessionRequest) => put(r.holder), decidedIn: { leases: LEASE_CAP } },
  [`${LeaseService.typeName}/CloseSession`]: { history: () => put() },
  [`${LeaseService.typeName}/LiftLockDelay`]: { history: () => put() },
  // Renewals write nothing into the history; the KeepAlive stream's messages are paced (keepalive-pace.ts).
  [`${LeaseService.typeName}/KeepAlive`]: { holds: () => "streams" },
  [`${LeaseService.typeName}/Renew`]: {},
  // Answers: what the server buffers for a slow reader is the buffered_bytes budget (docs/budgets.md).
  [`${LeaseService.typeName}/Observe`]: { holds: () => "streams" },
  [`${LeaseService.typeName}/Describe`]: {},
  [`${LeaseService.typeName}/ListResources`]: {},
  [`${LeaseService.typeName}/ListTokenKeys`]: {},
  [`${FencedStoreService.typeName}/Put`]: { history: putBytes, decidedIn: { store_bytes: STORE, caller_store_bytes: CALLER_STORE } },
  [`${FencedStoreService.typeName}/Delete`]: { history: deleteBytes, decidedIn: { store_bytes: STORE, caller_store_bytes: CALLER_STORE } },
  [`${FencedStoreService.typeName}/Txn`]: {
    history: (r: TxnRequest) =>
      put(r.resource, r.mutation?.idempotencyKey) + r.ops.reduce((n, o) => n + (o.op.case === "put" ? put(o.op.value.key, o.op.value.value) : o.op.case === "delete" ? put(o.op.value.key) : 0), 0),
    decidedIn: { store_bytes: STORE, caller_store_bytes: CALLER_STORE },
  },
  [`${FencedStoreService.typeName}/Batch`]: {
    history: (r: BatchRequest) => r.writes.reduce((n, w) => n + (w.write.case === "put" ? putBytes(w.write.value) : w.write.case === "delete" ? deleteBytes(w.write.value) : 0), 0),
    decidedIn: { store_bytes: STORE, caller_store_bytes: CALLER_STORE },
  },
  [`${FencedStoreService.typeName}/Get`]: {},
  [`${FencedStoreService.typeName}/Range`]: {},
  [`${FencedStoreService.typeName}/GetFence`]: {},
};

/** What caps a field: the budgets that count its bytes, and the bound of one value (validation/limits.ts). */
export interface FieldRow {
  counts: BudgetName[];
  bound: string;
}

const NAME = "a resource name: at most 256 bytes (MAX_RESOURCE_BYTES)";
const READ: BudgetName[] = [];
const WRITTEN: BudgetName[] = ["history_bytes_per_second"];
const HELD: BudgetName[] = ["history_bytes_per_second", "lease_bytes"];
const STORED: BudgetName[] = ["history_bytes_per_second", "store_bytes", "caller_store_bytes"];

/** Every `bytes` and `string` field of the requests of LeaseService and FencedStoreService, nested ones too. */
export const FIELDS: Record<string, FieldRow> = {
  "fencekeeper.v1.AcquireRequest.resource": { counts: HELD, bound: NAME },
  "fencekeeper.v1.AcquireRequest.holder": { counts: HELD, bound: "at most 256 bytes (MAX_HOLDER_BYTES)" },
  "fencekeeper.v1.AcquireRequest.value": { counts: HELD, bound: "at most 1 MiB (MAX_VALUE_BYTES)" },
  "fencekeeper.v1.AcquireAllRequest.resources": { counts: HELD, bound: "at most 100 names (MAX_ACQUIRE_ALL_RESOURCES), each a resource name: at most 256 bytes" },
  "fencekeeper.v1.AcquireAllRequest.holder": { counts: HELD, bound: "at most 256 bytes (MAX_HOLDER_BYTES)" },
  "fencekeeper.v1.ProclaimRequest.value": { counts: HELD, bound: "at most 1 MiB (MAX_VALUE_BYTES)" },
  "fencekeeper.v1.OpenSessionRequest.holder": { counts: WRITTEN, bound: "at most 256 bytes (MAX_HOLDER_BYTES); one session takes one of --max-leases-per-caller" },
  // A token is checked, never stored: its fields are bounded by the token's checks (tokens/checks.ts).
  "fencekeeper.v1.FencingToken.resource": { counts: READ, bound: NAME },
  "fencekeeper.v1.FencingToken.principal": { counts: READ, bound: "compared with the caller's; never stored" },
  "fencekeeper.v1.FencingToken.key_id": { counts: READ, bound: "names a published key; never stored" },
  "fencekeeper.v1.FencingToken.signature": { counts: READ, bound: "an Ed25519 signature, 64 bytes; never stored" },
  "fencekeeper.v1.DescribeRequest.resource": { counts: READ, bound: NAME },
  "fencekeeper.v1.DescribeRequest.holders_page_token": { counts: READ, bound: "a token the server issued; checked, never stored" },
  "fencekeeper.v1.ObserveRequest.resource": { counts: ["streams"], bound: NAME },
  "fencekeeper.v1.LiftLockDelayRequest.resource": { counts: WRITTEN, bound: NAME },
  "fencekeeper.v1.ListResourcesRequest.prefix": { counts: READ, bound: NAME },
  "fencekeeper.v1.ListResourcesRequest.page_token": { counts: READ, bound: "a token the server issued; checked, never stored" },
  "fencekeeper.v1.PutRequest.resource": { counts: STORED, bound: NAME },
  "fencekeeper.v1.PutRequest.key": { counts: STORED, bound: "at most 1 KiB (MAX_KEY_BYTES)" },
  "fencekeeper.v1.PutRequest.value": { counts: STORED, bound: "at most 1 MiB (MAX_VALUE_BYTES)" },
  "fencekeeper.v1.DeleteRequest.resource": { counts: WRITTEN, bound: NAME },
  "fencekeeper.v1.DeleteRequest.key": { counts: WRITTEN, bound: "at most 1 KiB (MAX_KEY_BYTES)" },
  "fencekeeper.v1.TxnRequest.resource": { counts: STORED, bound: NAME },
  "fencekeeper.v1.TxnPut.key": { counts: STORED, bound: "at most 1 KiB (MAX_KEY_BYTES)" },
  "fencekeeper.v1.TxnPut.value": { counts: STORED, bound: "at most 1 MiB in all of a Txn's values (MAX_TXN_VALUE_BYTES)" },
  "fencekeeper.v1.TxnDelete.key": { counts: WRITTEN, bound: "at most 1 KiB (MAX_KEY_BYTES)" },
  // The idempotency record lives 24 h on a shared lease; its bytes are written with the write.
  "fencekeeper.v1.Mutation.idempotency_key": { counts: WRITTEN, bound: "at most 256 bytes (MAX_IDEMPOTENCY_KEY_BYTES), stored hashed" },
  "fencekeeper.v1.GetRequest.resource": { counts: READ, bound: NAME },
  "fencekeeper.v1.GetRequest.key": { counts: READ, bound: "at most 1 KiB (MAX_KEY_BYTES)" },
  "fencekeeper.v1.RangeRequest.resource": { counts: READ, bound: NAME },
  "fencekeeper.v1.RangeRequest.prefix": { counts: READ, bound: "at most 1 KiB (MAX_KEY_BYTES)" },
  "fencekeeper.v1.RangeRequest.page_token": { counts: READ, bound: "a token the server issued; checked, never stored" },
  "fencekeeper.v1.GetFenceRequest.resource": { counts: READ, bound: NAME },
};

/** The row of a method; throws for one without. */
export function costOf(method: DescMethod): CostRow {
  const row = COSTS[`${method.parent.typeName}/${method.name}`];
  if (!row) throw new Error(`${method.parent.typeName}/${method.name} has no row in server/budgets/table.ts: say what a call of it may cost its caller`);
  return row;
}

/** Throws, at startup, if a method of the services has no row in the table. */
export function checkTable(services: DescService[]): void {
  for (const s of services) for (const m of s.methods) costOf(m);
}
