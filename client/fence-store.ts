// The one question a fenced resource asks of its own storage: is this generation still current for this
// resource, and if it is, remember it. A service that owns its state and takes writes over HTTP or gRPC
// keeps one fence per resource in a store it already runs (PostgreSQL, MariaDB, Redis, ...); the fenced
// endpoint (client/fenced-http.ts) asks it before a write goes on. Implementations sit beside the store's
// recipe (client/postgres.ts, client/mariadb.ts, client/redis.ts).

/**
 * The answer of a fence store.
 * - admitted: generation is at least the resource's fence, which now equals generation.
 * - stale: a newer generation of the resource has been admitted; fence is the one in force.
 */
export type FenceVerdict = { status: "admitted"; fence: bigint } | { status: "stale"; fence: bigint };

export interface FenceStore {
  /**
   * Atomically, for one resource: refuse a generation below the resource's fence; otherwise raise the
   * fence to it. A resource never seen has no fence: its first generation is admitted. Generations of
   * different resources are never compared.
   */
  admit(resource: string, generation: bigint): Promise<FenceVerdict>;
}
