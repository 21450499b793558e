// What a replica does with an etcd member that let a call go unanswered: it leaves it (etcd3's circuit
// breaker for that member, held open), and finds out off the calls' path when it answers again.
import { Etcd3, GRPCDeadlineExceededError, GRPCUnavailableError, type IOptions } from "etcd3";
import { circuitBreaker, ConsecutiveBreaker, handleWhen, noop, type IPolicy } from "cockatiel";

/** Failures that say the member did not answer (or could not be reached), not that it refused. */
export const noAnswer = (err: Error) => err instanceof GRPCDeadlineExceededError || err instanceof GRPCUnavailableError;

/** How often a member that was left is asked whether it answers again. */
const PROBE_INTERVAL_MS = 500;

export interface MemberProbeOptions {
  callTimeoutMs: number;
  credentials?: IOptions["credentials"];
  grpcOptions?: IOptions["grpcOptions"];
}

/**
 * The breaker of one member (etcd3's faultHandling.host): opened by one call that went unanswered, it
 * is held open (isolated) while a probe asks the member, every PROBE_INTERVAL_MS, for a linearizable
 * read of one key, on a connection of its own with the calls' deadline. Any answer, even a refusal,
 * closes it: the member is reachable and has a leader again. A member cut from its peers does not
 * answer such a read, so it stays left. No call of a client waits on a probe, and none is sent to the
 * member meanwhile: etcd3 sends it to another member, never the same call twice.
 */
export function memberBreaker(host: string, o: MemberProbeOptions): IPolicy {
  // halfOpenAfter is never reached: the breaker is isolated as soon as it opens, until a probe answers.
  const breaker = circuitBreaker(handleWhen(noAnswer), { halfOpenAfter: 3_600_000, breaker: new ConsecutiveBreaker(1) });
  let probing = false;
  breaker.onBreak(() => {
    if (probing) return;
    probing = true;
    const isolation = breaker.isolate();
    const attempt = () => {
      // A client of its own each time, closed after: nothing stays open between probes, and an unref'd
      // timer does not keep a stopping server alive.
      const probe = new Etcd3({
        hosts: host,
        credentials: o.credentials,
        grpcOptions: o.grpcOptions,
        defaultCallOptions: () => ({ deadline: Date.now() + o.callTimeoutMs }),
        faultHandling: { global: noop, host: () => noop },
      });
      probe.kv
        .range({ key: Buffer.from("\0"), count_only: true })
        .then(
          () => true,
          (err: Error) => !noAnswer(err),
        )
        .then((answered) => {
          probe.close();
          if (!answered) return void setTimeout(attempt, PROBE_INTERVAL_MS).unref();
          probing = false;
          isolation.dispose();
        });
    };
    attempt();
  });
  return breaker;
}
