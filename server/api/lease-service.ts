// LeaseService handlers: protobuf in, domain call, protobuf out.
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { LeaseService, type KeepAliveResponseSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { AsyncQueue } from "../util/async-queue.js";
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
      // Renewals run side by side: one slow lease must not hold up the others on the stream. Each answer
      // names its lease; one lease's failure is that lease's answer, and the stream goes on.
      const answers = new AsyncQueue<MessageInitShape<typeof KeepAliveResponseSchema>>();
      let pending = 0;
      let ended = false;
      const settle = () => ended && pending === 0 && answers.close();
      const renew = async (leaseId: bigint) => {
        try {
          answers.push({ leaseId, ttl: seconds(await coordinator.renew(leaseId)) });
        } catch (err) {
          answers.push({ leaseId, error: toStatus(err, log) });
        } finally {
          pending--;
          settle();
        }
      };
      void (async () => {
        try {
          for await (const req of requests) {
            pending++;
            void renew(req.leaseId);
          }
        } catch (err) {
          answers.fail(err);
        } finally {
          ended = true;
          settle();
        }
      })();
      yield* answers;
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
