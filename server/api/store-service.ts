// FencedStoreService handlers: protobuf in, domain call, protobuf out.
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Access, HasValues } from "../auth/access.js";
import { DomainError, invalid } from "../errors/errors.js";
import { checkResource } from "../validation/validate.js";
import { FencedStoreService, type BatchWrite, type Mutation as ProtoMutation } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { Hold, type HoldMember } from "../etcd/hold.js";
import { checkBatch } from "../store/batch-limits.js";
import type { Commit, FencedStore, Mutation, StoreOp } from "../store/fenced-store.js";
import { fenceModeFromProto } from "./convert.js";
import { tokenFromProto } from "../wire/token-proto.js";
import type { CallContext } from "../rpc/call-context.js";
import { toStatus } from "../rpc/status.js";

function mutation(resource: string, m: ProtoMutation | undefined, ops: StoreOp[], access: Access, ctx: HasValues): Mutation {
  checkResource(resource);
  // Decided before the handler ran; a Batch's write on a denied resource is refused here, on its own.
  access.granted(ctx, "write", resource);
  return {
    principal: access.ownerUnlessAdmin(ctx, resource),
    caller: access.owner(ctx),
    resource,
    token: tokenFromProto(m?.token, "mutation.token"),
    mode: fenceModeFromProto(m?.mode ?? 0),
    idempotencyKey: m?.idempotencyKey ?? "",
    ops,
  };
}

const commitOf = (c: Commit) => ({ revision: c.revision, fence: c.fence, replayed: c.replayed });
const commit = (c: Commit) => ({ commit: commitOf(c) });

export function storeService(store: FencedStore, access: Access, log: Logger): Partial<ServiceImpl<typeof FencedStoreService>> {
  // One write of a Batch, exactly as the Put or Delete alone, its transaction held for the others'.
  const write = (w: BatchWrite, i: number, ctx: CallContext, held: HoldMember): Promise<Commit> => {
    // A write the policy denied is refused on its own, and told with the generation it carried.
    const decided = (r: { resource: string; mutation?: ProtoMutation }, ops: StoreOp[], what: "put" | "delete") => {
      try {
        return mutation(r.resource, r.mutation, ops, access, ctx);
      } catch (err) {
        if (err instanceof DomainError && err.reason === "PERMISSION_DENIED") store.deniedWrite(r.resource, what, r.mutation?.token?.generation);
        throw err;
      }
    };
    switch (w.write.case) {
      case "put": {
        const r = w.write.value;
        return store.mutate(decided(r, [{ kind: "put", key: r.key, value: r.value }], "put"), "put", held);
      }
      case "delete": {
        const r = w.write.value;
        return store.mutate(decided(r, [{ kind: "delete", key: r.key }], "delete"), "delete", held);
      }
      default:
        throw invalid(`writes[${i}] sets neither put nor delete`);
    }
  };

  return {
    put: async (req, ctx) =>
      commit(await store.mutate(mutation(req.resource, req.mutation, [{ kind: "put", key: req.key, value: req.value }], access, ctx), "put")),

    delete: async (req, ctx) =>
      commit(await store.mutate(mutation(req.resource, req.mutation, [{ kind: "delete", key: req.key }], access, ctx), "delete")),

    txn: async (req, ctx) => {
      const ops = req.ops.map((o, i): StoreOp => {
        switch (o.op.case) {
          case "put":
            return { kind: "put", key: o.op.value.key, value: o.op.value.value };
          case "delete":
            return { kind: "delete", key: o.op.value.key };
          default:
            throw invalid(`ops[${i}] sets neither put nor delete`);
        }
      });
      return commit(await store.mutate(mutation(req.resource, req.mutation, ops, access, ctx), "txn"));
    },

    batch: async (req, ctx) => {
      let valueBytes = 0;
      for (const w of req.writes) if (w.write.case === "put") valueBytes += w.write.value.value.byteLength;
      checkBatch(req.writes.length, valueBytes);
      const hold = new Hold(req.writes.length);
      const results = await Promise.all(
        req.writes.map(async (w, i) => {
          const held = hold.member();
          try {
            return { result: { case: "commit" as const, value: commitOf(await write(w, i, ctx, held)) } };
          } catch (err) {
            return { result: { case: "error" as const, value: toStatus(err, log) } };
          } finally {
            // Refused before it queued a transaction: the others need not wait for it.
            held.arrived();
          }
        }),
      );
      return { results };
    },

    get: async (req) => {
      checkResource(req.resource);
      return store.get(req.resource, req.key);
    },

    range: async (req) => {
      checkResource(req.resource);
      return store.range(req);
    },

    getFence: async (req) => {
      checkResource(req.resource);
      return store.getFence(req.resource);
    },
  };
}
