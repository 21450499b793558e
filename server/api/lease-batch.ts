// LeaseService.LeaseBatch and LeaseService.AcquireAll: protobuf in, the same domain calls as Acquire and
// Release, protobuf out.
//
// LeaseBatch carries many independent acquisitions and releases, each answered on its own, as the
// store's Batch carries writes: the ops run concurrently, so the committer packs the grants and
// releases that arrive together into as few etcd requests as it can. AcquireAll takes several
// resources all or nothing, one after the other in the order of their names' bytes (Curator's
// InterProcessMultiLock), and gives back what it took when one of them fails.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import { DomainError, invalid } from "../errors/errors.js";
import { checkResource } from "../validation/validate.js";
import { MAX_ACQUIRE_ALL_RESOURCES, MAX_LEASE_BATCH_OPS, MAX_LEASE_BATCH_VALUE_BYTES } from "../validation/limits.js";
import {
  AcquireRequestSchema,
  type AcquireRequest,
  type AcquireResponseSchema,
  type LeaseService,
  type ReleaseRequest,
} from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { CallContext } from "../rpc/call-context.js";
import { toStatus } from "../rpc/status.js";
import { waitEnd } from "./convert.js";
import { tokenFromProto } from "../wire/token-proto.js";

type Grant = MessageInitShape<typeof AcquireResponseSchema>;

/** What the batch handlers need of LeaseService's own: the very steps of Acquire and Release alone. */
export interface LeaseOps {
  /** An Acquire as the call alone: its checks, its waiting slot, the domain, the answer. */
  acquire(req: AcquireRequest, ctx: CallContext): Promise<Grant>;
  /** An Acquire whose checks are done and whose wait ends at waitUntil (no slot taken). */
  acquireUntil(req: AcquireRequest, ctx: CallContext, waitUntil: number | undefined): Promise<Grant>;
  /** A Release as the call alone. */
  release(req: Pick<ReleaseRequest, "token">, ctx: CallContext): Promise<void>;
  /** Takes one of the caller's waiting-Acquire slots; the function returned gives it back. */
  waiterSlot(ctx: CallContext): () => void;
  /** Throws the refusal the pipeline decided for the caller acquiring on resource (each op on its own). */
  granted(ctx: CallContext, resource: string): void;
  log: Logger;
}

export function leaseBatchHandlers(d: LeaseOps): Pick<ServiceImpl<typeof LeaseService>, "leaseBatch" | "acquireAll"> {
  return {
    leaseBatch: async (req, ctx) => {
      let valueBytes = 0;
      for (const o of req.ops) if (o.op.case === "acquire") valueBytes += o.op.value.value.byteLength;
      checkLeaseBatch(req.ops.length, valueBytes);
      const results = await Promise.all(
        req.ops.map(async (o, i) => {
          try {
            switch (o.op.case) {
              case "acquire": {
                const a = o.op.value;
                checkResource(a.resource);
                if (a.preempt) throw invalid(`ops[${i}] asks to preempt "${a.resource}": preempt with Acquire alone, not in a LeaseBatch`);
                d.granted(ctx, a.resource);
                return { result: { case: "acquired" as const, value: await d.acquire(a, ctx) } };
              }
              case "release": {
                const token = tokenFromProto(o.op.value.token, `ops[${i}].release.token`);
                if (token) {
                  checkResource(token.resource, "token.resource");
                  d.granted(ctx, token.resource);
                }
                await d.release(o.op.value, ctx);
                return { result: { case: "released" as const, value: {} } };
              }
              default:
                throw invalid(`ops[${i}] sets neither acquire nor release`);
            }
          } catch (err) {
            return { result: { case: "error" as const, value: toStatus(err, d.log) } };
          }
        }),
      );
      return { results };
    },

    acquireAll: async (req, ctx) => {
      const resources = checkAcquireAll(req.resources);
      // One end for the whole set: the later resources wait only for what is left of it.
      const waitUntil = waitEnd(req.waitTimeout, ctx);
      const done = req.wait ? d.waiterSlot(ctx) : undefined;
      // The fixed order: two callers asking for overlapping sets take their common resources in the
      // same order, so neither can hold one the other needs while waiting for one the other holds.
      const order = resources.map((r, i) => ({ i, key: Buffer.from(r, "utf8") })).sort((a, b) => Buffer.compare(a.key, b.key));
      const grants: Grant[] = new Array(resources.length);
      const taken: Grant[] = [];
      try {
        for (const { i } of order) {
          const one = create(AcquireRequestSchema, {
            resource: resources[i],
            ttl: req.ttl,
            holder: req.holder,
            wait: req.wait,
            sessionId: req.sessionId,
          });
          grants[i] = await d.acquireUntil(one, ctx, waitUntil);
          taken.push(grants[i]);
        }
        // A caller gone by now never learns its tokens: what it took is given back.
        if (ctx.signal.aborted) throw new DomainError("cancelled", "the call was cancelled before its answer; every resource it acquired was released");
        return { acquisitions: grants };
      } catch (err) {
        await giveBack(d, taken, ctx);
        throw err;
      } finally {
        done?.();
      }
    },
  };
}

/** Releases what an AcquireAll took before it failed, last first; a release that fails is logged, and that acquisition ends with its lease or session. */
async function giveBack(d: LeaseOps, taken: Grant[], ctx: CallContext): Promise<void> {
  const failed = await Promise.allSettled(taken.reverse().map((g) => d.release({ token: g.token as ReleaseRequest["token"] }, ctx)));
  for (const [n, f] of failed.entries()) {
    if (f.status === "rejected") {
      d.log.warn({ resource: taken[n].token?.resource, generation: String(taken[n].token?.generation), err: (f.reason as Error).message }, "AcquireAll: a resource taken before the failure was not released; it ends with its lease");
    }
  }
}

function tooLarge(message: string, meta: Record<string, string>): DomainError {
  return new DomainError("invalid_argument", message, "BATCH_TOO_LARGE", meta);
}

/** Refuses a LeaseBatch that can never be taken as it is (empty, too many ops, too many bytes of values). */
function checkLeaseBatch(ops: number, valueBytes: number): void {
  const meta = { ops: String(ops), value_bytes: String(valueBytes), max_ops: String(MAX_LEASE_BATCH_OPS), max_value_bytes: String(MAX_LEASE_BATCH_VALUE_BYTES) };
  if (ops === 0) throw invalid("the batch has no ops; give at least one acquire or release");
  if (ops > MAX_LEASE_BATCH_OPS) throw tooLarge(`the batch has ${ops} ops; at most ${MAX_LEASE_BATCH_OPS} are allowed in one LeaseBatch: split it into smaller batches`, meta);
  if (valueBytes > MAX_LEASE_BATCH_VALUE_BYTES) {
    throw tooLarge(`the batch carries ${valueBytes} bytes of values; at most ${MAX_LEASE_BATCH_VALUE_BYTES} bytes (2 MiB) are allowed in one LeaseBatch: split it into smaller batches`, meta);
  }
}

/** The resources of an AcquireAll, checked: 1 to MAX_ACQUIRE_ALL_RESOURCES distinct names. */
function checkAcquireAll(resources: string[]): string[] {
  if (resources.length === 0) throw invalid("resources is empty; name at least one resource to acquire");
  if (resources.length > MAX_ACQUIRE_ALL_RESOURCES) {
    throw tooLarge(`resources names ${resources.length} resources; at most ${MAX_ACQUIRE_ALL_RESOURCES} are allowed in one AcquireAll`, {
      resources: String(resources.length),
      max_resources: String(MAX_ACQUIRE_ALL_RESOURCES),
    });
  }
  const seen = new Set<string>();
  resources.forEach((r, i) => {
    checkResource(r, `resources[${i}]`);
    if (seen.has(r)) throw invalid(`resources names "${r}" twice; name each resource once`);
    seen.add(r);
  });
  return resources;
}
