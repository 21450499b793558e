// Every call the server makes to etcd runs through here: timed for the observer (the metrics), and its
// failure classified once (errors.ts).
import { classify } from "./errors.js";

/**
 * Told of every etcd call: what it was, how long it took, its error if it failed, and, for the group
 * commit's requests, how many writes it carried.
 */
export type EtcdCallObserver = (what: string, seconds: number, error?: unknown, writes?: number) => void;

export class EtcdCalls {
  constructor(private readonly observer: EtcdCallObserver = () => undefined) {}

  /** Runs one etcd call (writes: of the group commit, the writes it carries); its failure leaves as the domain's error. */
  async run<T>(what: string, call: () => Promise<T>, writes?: number): Promise<T> {
    const started = performance.now();
    try {
      const result = await call();
      this.observer(what, (performance.now() - started) / 1000, undefined, writes);
      return result;
    } catch (err) {
      this.observer(what, (performance.now() - started) / 1000, err, writes);
      throw classify(what, err);
    }
  }

  /** Tells the observer of a call timed elsewhere (a renewal on the keepalive stream). */
  observe(what: string, seconds: number, error?: unknown): void {
    this.observer(what, seconds, error);
  }
}
