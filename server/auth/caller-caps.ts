// Caps per caller, so that one client cannot take the service from the others: streams it holds open
// and Acquire calls it has waiting, on this replica. A caller is its principal; without authentication,
// its client address. Over a cap: RESOURCE_EXHAUSTED naming the cap; the caller's other calls go on.
import { DomainError } from "../domain/errors.js";

export interface CapSettings {
  /** KeepAlive and Observe streams open at once. */
  streams: number;
  /** Acquire calls with wait in progress at once. */
  waiters: number;
  /** KeepAlive messages one stream may send per second (bursts of twice that). */
  streamMessagesPerSecond: number;
}

type Counted = "streams" | "waiters";

const WHAT: Record<Counted, string> = {
  streams: "KeepAlive and Observe streams open",
  waiters: "Acquire calls waiting",
};

export class CallerCaps {
  private readonly held = new Map<string, number>();

  constructor(private readonly caps: CapSettings) {}

  /** A stream's budget of messages: throws RESOURCE_EXHAUSTED, naming the rate, when it sends faster. */
  messageRate(): () => void {
    const rate = this.caps.streamMessagesPerSecond;
    const burst = 2 * rate;
    let tokens = burst;
    let at = performance.now();
    return () => {
      const now = performance.now();
      tokens = Math.min(burst, tokens + ((now - at) / 1000) * rate);
      at = now;
      if (tokens < 1) {
        throw new DomainError(
          "resource_exhausted",
          `this stream sent KeepAlive messages faster than ${rate} a second, the server's cap (--max-stream-messages-per-second); ` +
            "renew many leases in one message (lease_ids) instead",
          undefined,
          { cap: String(rate) },
        );
      }
      tokens -= 1;
    };
  }

  /** Takes one of the caller's slots; the function returned gives it back (once). */
  take(caller: string, kind: Counted): () => void {
    const key = `${kind}\0${caller}`;
    const n = this.held.get(key) ?? 0;
    const cap = this.caps[kind];
    if (n >= cap) {
      throw new DomainError(
        "resource_exhausted",
        `this caller has ${cap} ${WHAT[kind]} on this server already, its cap (--max-${kind}-per-caller); end some before starting more`,
        undefined,
        { cap: String(cap) },
      );
    }
    this.held.set(key, n + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left === 0) this.held.delete(key);
      else this.held.set(key, left);
    };
  }
}
