// LeaseService handlers: protobuf in, domain call, protobuf out.
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import { invalid } from "../domain/errors.js";
import type { LeaseCoordinator } from "../lease/coordinator.js";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { durationMs, seconds, tokenFromProto, tokenToProto } from "./convert.js";
import { streaming, unary } from "./errors.js";
import { keepAlive } from "./keepalive.js";

export function leaseService(coordinator: LeaseCoordinator, log: Logger): Partial<ServiceImpl<typeof LeaseService>> {
  return {
    acquire: unary(async (req, ctx) => {
      const waitTimeoutMs = durationMs(req.waitTimeout, "wait_timeout");
      if (waitTimeoutMs !== undefined && waitTimeoutMs < 0) throw invalid(`wait_timeout must not be negative, got ${waitTimeoutMs / 1000}s`);
      // The call's deadline and wait_timeout both bound the wait; the earlier one ends it.
      const limits = [ctx.timeoutMs(), waitTimeoutMs].filter((t): t is number => t !== undefined);
      const grant = await coordinator.acquire(
        {
          resource: req.resource,
          ttlMs: durationMs(req.ttl, "ttl"),
          holder: req.holder,
          wait: req.wait,
          waitUntil: limits.length ? Date.now() + Math.min(...limits) : undefined,
          sessionId: req.sessionId,
        },
        ctx.signal,
      );
      return { token: tokenToProto(grant.token), ttl: grant.ttlSeconds !== undefined ? seconds(grant.ttlSeconds) : undefined };
    }),

    keepAlive: streaming((requests, ctx) => keepAlive(coordinator, requests, ctx.signal, log)),

    renew: unary(async (req) => ({ ttl: seconds(await coordinator.renew(req.leaseId)) })),

    release: unary(async (req) => {
      await coordinator.release(tokenFromProto(req.token));
      return {};
    }),

    describe: unary(async (req) => {
      const d = await coordinator.describe(req.resource);
      return {
        held: d.held,
        holder: d.holder ?? "",
        token: d.token ? tokenToProto(d.token) : undefined,
        ttl: d.ttlSeconds !== undefined ? seconds(d.ttlSeconds) : undefined,
        waiters: d.waiters,
        fence: d.fence,
        lastIssued: d.lastIssued,
      };
    }),

    observe: streaming(async function* (req, ctx) {
      for await (const o of coordinator.observe(req.resource, ctx.signal)) {
        yield { held: o.held, holder: o.holder ?? "", token: o.token ? tokenToProto(o.token) : undefined, revision: o.revision };
      }
    }),

    openSession: unary(async (req) => {
      const s = await coordinator.openSession(durationMs(req.ttl, "ttl"), req.holder);
      return { sessionId: s.sessionId, ttl: seconds(s.ttlSeconds) };
    }),

    closeSession: unary(async (req) => {
      await coordinator.closeSession(req.sessionId);
      return {};
    }),
  };
}
