// FencedStoreService handlers: protobuf in, domain call, protobuf out.
import type { ServiceImpl } from "@connectrpc/connect";
import { invalid } from "../domain/errors.js";
import { FencedStoreService, type Mutation as ProtoMutation } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import type { Commit, FencedStore, Mutation, StoreOp } from "../store/fenced-store.js";
import { fenceModeFromProto, tokenFromProto } from "./convert.js";
import { unary } from "./errors.js";

function mutation(resource: string, m: ProtoMutation | undefined, ops: StoreOp[]): Mutation {
  return {
    resource,
    token: tokenFromProto(m?.token),
    mode: fenceModeFromProto(m?.mode ?? 0),
    idempotencyKey: m?.idempotencyKey ?? "",
    ops,
  };
}

const commit = (c: Commit) => ({ commit: { revision: c.revision, fence: c.fence, replayed: c.replayed } });

export function storeService(store: FencedStore): Partial<ServiceImpl<typeof FencedStoreService>> {
  return {
    put: unary(async (req) =>
      commit(await store.mutate(mutation(req.resource, req.mutation, [{ kind: "put", key: req.key, value: req.value }]), "put")),
    ),

    delete: unary(async (req) =>
      commit(await store.mutate(mutation(req.resource, req.mutation, [{ kind: "delete", key: req.key }]), "delete")),
    ),

    txn: unary(async (req) => {
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
      return commit(await store.mutate(mutation(req.resource, req.mutation, ops), "txn"));
    }),

    get: unary(async (req) => store.get(req.resource, req.key)),

    range: unary(async (req) => store.range(req)),

    getFence: unary(async (req) => store.getFence(req.resource)),
  };
}
