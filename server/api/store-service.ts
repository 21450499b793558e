// FencedStoreService handlers: protobuf in, domain call, protobuf out.
import type { ServiceImpl } from "@connectrpc/connect";
import type { Access, HasValues } from "../auth/access.js";
import { invalid } from "../domain/errors.js";
import { checkResource } from "../domain/validate.js";
import { FencedStoreService, type Mutation as ProtoMutation } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import type { Commit, FencedStore, Mutation, StoreOp } from "../store/fenced-store.js";
import { fenceModeFromProto, tokenFromProto } from "./convert.js";
import { unary } from "./errors.js";

function mutation(resource: string, m: ProtoMutation | undefined, ops: StoreOp[], access: Access, ctx: HasValues): Mutation {
  checkResource(resource);
  access.authorize(ctx, "write", resource);
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

const commit = (c: Commit) => ({ commit: { revision: c.revision, fence: c.fence, replayed: c.replayed } });

export function storeService(store: FencedStore, access: Access): Partial<ServiceImpl<typeof FencedStoreService>> {
  const reading = (ctx: HasValues, resource: string) => {
    checkResource(resource);
    access.authorize(ctx, "read", resource);
  };
  return {
    put: unary(async (req, ctx) =>
      commit(await store.mutate(mutation(req.resource, req.mutation, [{ kind: "put", key: req.key, value: req.value }], access, ctx), "put")),
    ),

    delete: unary(async (req, ctx) =>
      commit(await store.mutate(mutation(req.resource, req.mutation, [{ kind: "delete", key: req.key }], access, ctx), "delete")),
    ),

    txn: unary(async (req, ctx) => {
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
    }),

    get: unary(async (req, ctx) => {
      reading(ctx, req.resource);
      return store.get(req.resource, req.key);
    }),

    range: unary(async (req, ctx) => {
      reading(ctx, req.resource);
      return store.range(req);
    }),

    getFence: unary(async (req, ctx) => {
      reading(ctx, req.resource);
      return store.getFence(req.resource);
    }),
  };
}
