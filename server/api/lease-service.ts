// LeaseService handlers: protobuf in, domain call, protobuf out.
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import { VISIBLE, type Access } from "../auth/access.js";
import type { KeepAlivePace } from "../budgets/keepalive-pace.js";
import { invalid } from "../errors/errors.js";
import { checkResource } from "../validation/validate.js";
import type { LeaseCoordinator } from "../lease/coordinator.js";
import { ALGORITHM } from "../tokens/signer.js";
import { LeaseService, type AcquireRequest } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { durationMs, seconds, waitEnd } from "./convert.js";
import { acquireModeFromProto, tokenFromProto, tokenToProto } from "../wire/token-proto.js";
import { describeToProto, ownershipToProto } from "./ownership-proto.js";
import type { CallContext } from "../rpc/call-context.js";
import { keepAlive } from "./keepalive.js";
import type { AnswerBudget } from "../answers/budget.js";
import type { Ledger } from "../budgets/ledger.js";
import { CallerBuffers } from "../streams/coalescing-queue.js";
import { leaseBatchHandlers } from "./lease-batch.js";

export function leaseService(coordinator: LeaseCoordinator, access: Access, pace: KeepAlivePace, answers: AnswerBudget, ledger: Ledger, log: Logger): Partial<ServiceImpl<typeof LeaseService>> {
  /**
   * An Acquire that passed its checks: waits if asked, then answers with the signed token. waitUntil:
   * the end of the wait, when the caller decided it (AcquireAll's, for the whole set); otherwise from
   * the call's deadline and wait_timeout.
   */
  const acquire = async (req: AcquireRequest, ctx: CallContext, waitUntil = waitEnd(req.waitTimeout, ctx)) => {
    const grant = await coordinator.acquire(
      {
        resource: req.resource,
        ttlMs: durationMs(req.ttl, "ttl"),
        holder: req.holder,
        wait: req.wait,
        waitUntil,
        sessionId: req.sessionId,
        principal: access.owner(ctx),
        lockDelayMs: durationMs(req.lockDelay, "lock_delay"),
        mode: acquireModeFromProto(req.mode),
        value: req.value,
        maxHolders: req.maxHolders,
        preempt: req.preempt,
      },
      ctx.signal,
    );
    return {
      token: tokenToProto(grant.token),
      ttl: grant.ttlSeconds !== undefined ? seconds(grant.ttlSeconds) : undefined,
      lockDelay: grant.lockDelaySeconds !== undefined ? seconds(grant.lockDelaySeconds) : undefined,
    };
  };

  /** What the Observe streams of one caller keep together for readers that fall behind. */
  const callerBuffers = new CallerBuffers(answers.maxCallerBufferBytes);
  const renewals = access.renewalGrants((leaseId) => coordinator.heldResources(leaseId));
  /** What else the policy asks of a renewal by the caller, once the lease is known to be its own. */
  const renewable = (ctx: CallContext) => {
    const caller = access.caller(ctx);
    return (leaseId: bigint) => renewals.check(caller, leaseId);
  };

  /** A Release of the caller's (or, for the resource's admin, anyone's) token. */
  const release = async (req: { token?: Parameters<typeof tokenFromProto>[0] }, ctx: CallContext) => {
    const token = tokenFromProto(req.token);
    if (token) checkResource(token.resource, "token.resource");
    await coordinator.release(token, token ? access.ownerUnlessAdmin(ctx, token.resource) : undefined);
  };

  /** An Acquire checked as the single call is; its waiting slot, if it waits, is the pipeline's (server/budgets/ledger.ts). */
  const checkedAcquire = async (req: AcquireRequest, ctx: CallContext) => {
    checkResource(req.resource);
    return acquire(req, ctx);
  };

  return {
    // A waiting Acquire holds one of its caller's waiters, a stream one of its streams: the pipeline
    // charges them (server/budgets/ledger.ts). A batch's waiting operations take theirs one by one.
    acquire: checkedAcquire,

    ...leaseBatchHandlers({
      acquire: async (req, ctx) => {
        const done = req.wait ? ledger.hold(ctx.values, "waiters") : undefined;
        try {
          return await checkedAcquire(req, ctx);
        } finally {
          done?.();
        }
      },
      acquireUntil: acquire,
      release,
      waiterSlot: (ctx) => ledger.hold(ctx.values, "waiters"),
      granted: (ctx, resource) => void access.granted(ctx, "acquire", resource),
      log,
    }),

    keepAlive: async function* (requests, ctx) {
      const owner = access.owner(ctx);
      const bindings = owner !== undefined ? coordinator.streamBindings(owner, access.turnKey(ctx), renewable(ctx)) : undefined;
      yield* access.streams.run(access.streamAuthority(ctx, "KeepAlive", []), ctx.signal, (signal) =>
        keepAlive(coordinator, bindings, access.turnKey(ctx), pace.keepAliveBudget(access.callerKey(ctx), access.partyKey(ctx)), requests, signal, log),
      );
    },

    renew: async (req, ctx) => {
      const principal = access.owner(ctx);
      const allowed = principal !== undefined ? renewable(ctx) : undefined;
      return { ttl: seconds(await coordinator.renew(req.leaseId, { principal, caller: access.turnKey(ctx), via: "Renew", allowed })) };
    },

    release: async (req, ctx) => {
      // An admin of the resource may release anyone's lease of it.
      await release(req, ctx);
      return {};
    },

    proclaim: async (req, ctx) => {
      // Only the holder proclaims: an admin of the resource may release a holder, not speak for it.
      const token = tokenFromProto(req.token);
      if (token) checkResource(token.resource, "token.resource");
      return { revision: await coordinator.proclaim(token, req.value, access.owner(ctx)) };
    },

    describe: async (req, ctx) => {
      checkResource(req.resource);
      return describeToProto(await coordinator.describe(req.resource, access.owner(ctx), { maxBytes: answers.maxAnswerBytes, holdersPageToken: req.holdersPageToken }));
    },

    listResources: async (req, ctx) => {
      const page = await coordinator.listResources({ prefix: req.prefix, pageSize: req.pageSize, pageToken: req.pageToken, visible: ctx.values.get(VISIBLE) }, access.owner(ctx), answers.maxAnswerBytes);
      return {
        resources: page.resources.map(({ resource, description }) => ({ resource, state: describeToProto(description) })),
        nextPageToken: page.nextPageToken,
      };
    },

    observe: async function* (req, ctx) {
      checkResource(req.resource);
      // The stream's slot is the ledger's (server/budgets); what it buffers for a slow reader is bounded here.
      const buffers = callerBuffers.open(access.callerKey(ctx));
      try {
        const authority = access.streamAuthority(ctx, "Observe", [{ verb: "observe", resource: req.resource }]);
        const limits = { maxBytes: answers.maxAnswerBytes, buffer: { maxBytes: answers.maxStreamBufferBytes, pool: buffers.pool } };
        for await (const o of access.streams.run(authority, ctx.signal, (signal) => coordinator.observe(req.resource, signal, access.owner(ctx), limits))) {
          yield ownershipToProto(o);
        }
      } finally {
        buffers.close();
      }
    },

    openSession: async (req, ctx) => {
      const s = await coordinator.openSession(durationMs(req.ttl, "ttl"), req.holder, access.owner(ctx));
      return { sessionId: s.sessionId, ttl: seconds(s.ttlSeconds) };
    },

    closeSession: async (req, ctx) => {
      await coordinator.closeSession(req.sessionId, access.owner(ctx));
      return {};
    },

    liftLockDelay: async (req, ctx) => {
      checkResource(req.resource);
      const { lifted, generation } = await coordinator.liftLockDelay(req.resource);
      if (lifted) log.warn({ resource: req.resource, generation: String(generation), by: access.caller(ctx).name }, "lock-delay lifted");
      return { lifted, generation };
    },

    listTokenKeys: async () => ({
      keys: (await coordinator.tokenKeys()).map((k) => ({ keyId: k.keyId, algorithm: ALGORITHM, publicKey: k.raw })),
    }),
  };
}
