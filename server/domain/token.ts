// The fencing token in the domain's terms: which resource, which generation, which etcd lease.

export interface Token {
  readonly resource: string;
  /** The create revision of the owner key: strictly increasing across acquisitions of one resource. */
  readonly generation: bigint;
  readonly leaseId: bigint;
}

/** How the fenced store judges a token (see FenceMode in token.proto). */
export type FenceMode = "order" | "live";
