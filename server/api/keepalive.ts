// The KeepAlive stream: renewals of many leases, each answered on its own.
//
// Renewals run side by side: one slow lease must not hold up the others. A message renewing many leases
// (lease_ids) is answered by one message once all of them are. One lease's failure is that lease's
// answer; the stream goes on. A caller's streams share one budget (server/budgets/keepalive-pace.ts): messages a
// second, and renewals in flight until their answer is sent. Over it, the server reads the caller's
// streams no further until the budget has room, so HTTP/2 flow control holds the client back: a fast
// sender is slowed, never cut off, and one client's flood cannot take the service from the others.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import { invalid } from "../errors/errors.js";
import type { KeepAliveBudget } from "../budgets/keepalive-pace.js";
import type { StreamBindings } from "../lease/bindings.js";
import type { LeaseCoordinator } from "../lease/coordinator.js";
import type { KeepAliveRequest, KeepAliveResponseSchema, LeaseRenewalSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { AsyncQueue } from "../streams/async-queue.js";
import { seconds } from "./convert.js";
import { toStatus } from "../rpc/status.js";

type Answer = MessageInitShape<typeof KeepAliveResponseSchema>;
type Renewal = MessageInitShape<typeof LeaseRenewalSchema>;

/** Most lease ids in one message. */
export const MAX_LEASES_PER_MESSAGE = 10_000;

export async function* keepAlive(
  coordinator: LeaseCoordinator,
  /** With authentication on: the leases this stream's caller may renew. */
  bindings: StreamBindings | undefined,
  /** Who the stream's caller is, so that callers' renewals take turns. */
  caller: string,
  /** The caller's budget, which each message waits for. */
  budget: KeepAliveBudget,
  requests: AsyncIterable<KeepAliveRequest>,
  signal: AbortSignal,
  log: Logger,
): AsyncGenerator<Answer> {
  // Each answer with the number of renewals it carries; they count until the answer has been sent.
  const answers = new AsyncQueue<{ answer: Answer; count: number }>();
  let reading = true;
  const renewOne = async (leaseId: bigint): Promise<Renewal> => {
    try {
      return { leaseId, ttl: seconds(await coordinator.renew(leaseId, { bindings, caller, via: "KeepAlive" })) };
    } catch (err) {
      return { leaseId, error: toStatus(err, log) };
    }
  };
  let pending = 0;
  const settled = () => {
    if (--pending === 0 && !reading) answers.close();
  };
  // Per message, only the promise of the renewal itself: a one-id client sends thousands a second.
  const handle = (req: KeepAliveRequest, count: number) => {
    pending++;
    if (req.leaseIds.length === 0) {
      const leaseId = req.leaseId;
      coordinator.renew(leaseId, { bindings, caller, via: "KeepAlive" }).then(
        (ttl) => {
          answers.push({ answer: { leaseId, ttl: seconds(ttl) }, count });
          settled();
        },
        (err: unknown) => {
          answers.push({ answer: { leaseId, error: toStatus(err, log) }, count });
          settled();
        },
      );
    } else {
      const ids = req.leaseId !== 0n ? [req.leaseId, ...req.leaseIds] : req.leaseIds;
      void Promise.all(ids.map(renewOne)).then((renewals) => {
        answers.push({ answer: { renewals }, count });
        settled();
      });
    }
  };
  void (async () => {
    try {
      for await (const req of requests) {
        if (req.leaseIds.length > MAX_LEASES_PER_MESSAGE) {
          throw invalid(`a KeepAliveRequest names ${req.leaseIds.length} leases; at most ${MAX_LEASES_PER_MESSAGE} are allowed in one message`);
        }
        const count = Math.max(1, req.leaseIds.length + (req.leaseId !== 0n && req.leaseIds.length > 0 ? 1 : 0));
        const waiting = budget.admit(count);
        if (waiting) await waiting;
        if (signal.aborted) break;
        handle(req, count);
      }
    } catch (err) {
      answers.fail(err);
    } finally {
      reading = false;
      if (pending === 0) answers.close();
    }
  })();
  // An ended stream gives its share of the budget back at once, and a read waiting for the budget ends.
  const onAbort = () => budget.close();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const { answer, count } of answers) {
      yield answer;
      budget.answered(count);
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    budget.close();
  }
}
