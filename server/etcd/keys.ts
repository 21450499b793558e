// The etcd key layout. This module alone knows how fencekeeper's state is laid out in etcd.
//
// Under the configured prefix P, each resource R (URI-encoded, so it never contains "/") has:
//   P r/R/q/<lease id, 16 hex digits>   one key per acquisition in line, attached to its etcd lease.
//                                       The key with the smallest create revision owns the resource;
//                                       that create revision is the generation of its token.
//   P r/R/issued                        the greatest generation issued, 20 decimal digits
//   P r/R/fence                         the greatest generation accepted by the store, 20 decimal digits
//   P r/R/d/<key>                       the fenced store's values
//   P r/R/i/<sha-256 of the idempotency key, hex>   idempotency records, on a 24 h lease
// Generations are written fixed-width so that etcd's byte-wise value comparisons order them as numbers.

const GENERATION_DIGITS = 20;

export class KeyLayout {
  constructor(readonly prefix: string) {
    if (!prefix.endsWith("/")) throw new Error(`key prefix must end with "/", got ${JSON.stringify(prefix)}`);
  }

  private resourceRoot(resource: string): string {
    return `${this.prefix}r/${encodeURIComponent(resource)}/`;
  }

  queuePrefix(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}q/`);
  }

  queueKey(resource: string, leaseId: bigint): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}q/${leaseId.toString(16).padStart(16, "0")}`);
  }

  issuedKey(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}issued`);
  }

  fenceKey(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}fence`);
  }

  dataPrefix(resource: string, keyPrefix = ""): Buffer {
    return Buffer.concat([Buffer.from(`${this.resourceRoot(resource)}d/`), Buffer.from(keyPrefix, "utf8")]);
  }

  dataKey(resource: string, key: string): Buffer {
    return this.dataPrefix(resource, key);
  }

  /** The store key of an etcd data key of this resource. */
  storeKey(resource: string, etcdKey: Buffer): string {
    const root = this.dataPrefix(resource);
    return etcdKey.subarray(root.length).toString("utf8");
  }

  idempotencyKey(resource: string, keyHash: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}i/${keyHash}`);
  }
}

/** The generation as a fixed-width value, comparable byte-wise in etcd. */
export function encodeGeneration(generation: bigint): Buffer {
  if (generation < 0n) throw new Error(`negative generation ${generation}`);
  return Buffer.from(generation.toString().padStart(GENERATION_DIGITS, "0"));
}

export function decodeGeneration(value: Buffer | undefined): bigint {
  if (!value || value.length === 0) return 0n;
  return BigInt(value.toString());
}

/** The end of etcd's range for every key that starts with prefix. */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // the whole keyspace
}
