// Who holds what, as the domain says it (server/events/events.ts), at debug level: a line when a
// generation is granted or released, when a renewal finds a lease gone, and when a session opens or
// closes, so that an operator can follow ownership on this replica (--log-level debug). Each line is
// written during its call, and at debug level calls keep their scope (server/rpc/call-scope.ts), so the
// logger adds the call's request id. These lines name resources, generations and
// lease ids (never a signature, a value or a holder's name).
import type { Logger } from "pino";
import type { DomainEvents } from "../events/events.js";
import { keepCallScope } from "../rpc/call-scope.js";

export function ownershipLog(log: Logger, events: DomainEvents): void {
  if (log.isLevelEnabled("debug")) keepCallScope();
  events.on((e) => {
    if (!log.isLevelEnabled("debug")) return;
    switch (e.type) {
      case "granted":
        return log.debug(
          { resource: e.resource, generation: String(e.generation), leaseId: String(e.leaseId), onSession: e.onSession, ttlSeconds: e.ttlSeconds, waited: e.waited },
          "granted",
        );
      case "released":
        return log.debug({ resource: e.resource, generation: String(e.generation), leaseId: String(e.leaseId), onSession: e.onSession }, "released");
      case "lease gone":
        return log.debug({ leaseId: String(e.leaseId) }, "lease gone");
      case "session opened":
        return log.debug({ sessionId: String(e.sessionId), ttlSeconds: e.ttlSeconds }, "session opened");
      case "session closed":
        return log.debug({ sessionId: String(e.sessionId) }, "session closed");
    }
  });
}
