// Asks etcd, every interval, whether it answers a linearizable read (one that needs a quorum) and
// whether it has run out of space (its NOSPACE alarm), and tells HealthStatus. Each probe has the etcd call deadline; the next starts an interval after the last
// one ended, so that probes never pile up behind a slow etcd.
import type { Logger } from "pino";
import type { HealthStatus } from "./status.js";

export interface EtcdProbe {
  /** Resolves after the first probe has answered, whatever it found. */
  readonly first: Promise<void>;
  stop(): void;
}

/** What a probe found: etcd answered; outOfSpace when etcd has the NOSPACE alarm raised (undefined: not known). */
export interface EtcdState {
  outOfSpace?: boolean;
}

export function probeEtcd(check: () => Promise<EtcdState | void>, status: HealthStatus, intervalMs: number, log: Logger): EtcdProbe {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let failures = 0;
  const once = async () => {
    try {
      const state = await check();
      // Unknown (the alarm could not be read): as last known.
      const outOfSpace = state?.outOfSpace ?? status.etcdOutOfSpace;
      if (outOfSpace && !status.etcdOutOfSpace) {
        log.error(
          "etcd is out of space (NOSPACE alarm) and refuses writes: not serving. Compact and defragment etcd and run `etcdctl alarm disarm`, or raise its --quota-backend-bytes",
        );
      } else if (!outOfSpace && status.etcdOutOfSpace) log.info("etcd's NOSPACE alarm is gone");
      if (!status.etcdUp) log.info(outOfSpace ? "etcd answers, out of space: not serving" : "etcd answers: serving");
      failures = 0;
      status.setEtcdOutOfSpace(outOfSpace);
      status.setEtcdReachable(true);
    } catch (err) {
      // The first failure in a row is worth a warning; the rest of an outage only at debug level.
      log[failures++ === 0 ? "warn" : "debug"]({ err: err instanceof Error ? err.message : String(err) }, "etcd does not answer: not serving");
      status.setEtcdReachable(false);
    }
  };
  const loop = () => {
    if (stopped) return;
    timer = setTimeout(() => void once().then(loop), intervalMs);
  };
  const first = once().then(loop);
  return {
    first,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
