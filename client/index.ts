// The fencekeeper TypeScript SDK.
export { FencekeeperClient, DEFAULT_URL, DEFAULT_TTL_MS } from "./client.js";
export type { ClientOptions, AcquireOptions, AcquireAllOptions, Description, Holder, Ownership } from "./client.js";
export { Lease } from "./lease.js";
export { Leadership, type Leader, type LeaderChange, type CampaignOptions, type LeadCallbacks, type LeadOptions } from "./election.js";
export type { Store, Commit, Entry, GetResult, ListOptions, ReadOptions, TxnOp, Value, WriteOptions, FenceModeName } from "./store.js";
export { formatToken, parseToken, tokenToJson, type Token, type TokenJson } from "./token.js";
export { verifyToken, canonicalToken, type TokenKey, type Verification } from "./verify-token.js";
export type { Credentials } from "./servers.js";
export type { ClientEvent } from "./events.js";
export {
  FencekeeperError,
  StaleTokenError,
  LeaseNotHeldError,
  GenerationNotIssuedError,
  ResourceHeldError,
  LockDelayError,
  LeaseNotFoundError,
  PreemptedError,
  IdempotencyKeyReusedError,
  UnavailableError,
  TimeoutError,
  InvalidArgumentError,
  CanceledError,
  UnauthenticatedError,
  PermissionDeniedError,
  LeaseLostError,
  type LossCause,
} from "./errors.js";
export { fencedUpdate, fencedInsert, fencedDelete, fenceColumnsDdl, FENCE_COLUMNS } from "./postgres.js";
export type { Queryable, FencedTarget, FencedWrite, FencedOutcome } from "./postgres.js";
