// LeaseService handlers: protobuf in, domain call, protobuf out.
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { LeaseCoordinator } from "../lease/coordinator.js";
import { durationMs, seconds, tokenFromProto, tokenToProto } from "./convert.js";
import { streaming, toStatus, unary } from "./errors.js";

export function leaseService(coordinator: LeaseCoordinator, log: Logger): Partial<ServiceImpl<typeof LeaseService>> {
  return {
    acquire: unary(log, async (req, ctx) => {
      // The call's deadline and wait_timeout both bound the wait; the earlier one ends it.
      const limits = [ctx.timeoutMs(), durationMs(req.waitTimeout, "wait_timeout")].filter((t): t is number => t !== undefined);
      const grant = await coordinator.acquire(
        {
          resource: req.resource,
          ttlMs: durationMs(req.ttl, "ttl"),
          holder: req.holder,
          wait: req.wait,
          waitUntil: limits.length ? Date.now() + Math.min(...limits) : undefined,
        },
        ctx.signal,
      );
      return { token: tokenToProto(grant.token), ttl: seconds(grant.ttlSeconds) };
    }),

    keepAlive: streaming(log, async function* (requests) {
      for await (const req of requests) {
        try {
          const ttl = await coordinator.renew(req.leaseId);
          yield { leaseId: req.leaseId, ttl: seconds(ttl) };
        } catch (err) {
          // One lease's failure is that lease's answer; the stream goes on for the others.
          yield { leaseId: req.leaseId, error: toStatus(err, log) };
        }
      }
    }),

    renew: unary(log, async (req) => ({ ttl: seconds(await coordinator.renew(req.leaseId)) })),

    release: unary(log, async (req) => {
      await coordinator.release(tokenFromProto(req.token));
      return {};
    }),

    describe: unary(log, async (req) => {
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

    observe: streaming(log, async function* (req, ctx) {
      for await (const o of coordinator.observe(req.resource, ctx.signal)) {
        yield { held: o.held, holder: o.holder ?? "", token: o.token ? tokenToProto(o.token) : undefined, revision: o.revision };
      }
    }),
  };
}
