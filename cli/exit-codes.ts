// The exit codes of the fencekeeper command, one per outcome a script may branch on.
import { CommanderError } from "commander";
import {
  CanceledError,
  FencekeeperError,
  GenerationNotIssuedError,
  IdempotencyKeyReusedError,
  InvalidArgumentError,
  LeaseLostError,
  LeaseNotFoundError,
  LeaseNotHeldError,
  ResourceHeldError,
  StaleTokenError,
  TimeoutError,
  UnavailableError,
} from "../client/index.js";

export const EXIT = {
  /** Done. */
  ok: 0,
  /** A failure not listed below (e.g. an internal server error). */
  failed: 1,
  /** Bad input: an unknown option, a malformed argument or token, or INVALID_ARGUMENT from the server. */
  usage: 2,
  /** acquire: the lease was lost while it was held. */
  lost: 3,
  /** get: no such key; or the lease named does not exist (LEASE_NOT_FOUND). */
  notFound: 4,
  /** A write refused by the fence: STALE_TOKEN, LEASE_NOT_HELD or GENERATION_NOT_ISSUED. */
  refused: 5,
  /** acquire without --wait: the resource is held by another holder. */
  held: 6,
  /** acquire --wait <duration>: gave up waiting (DEADLINE_EXCEEDED). */
  timeout: 7,
  /** No server could be reached, or etcd did not answer (UNAVAILABLE). */
  unavailable: 8,
  /** Interrupted (Ctrl-C) before the command finished. */
  interrupted: 130,
} as const;

export function exitCodeOf(err: unknown): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  if (err instanceof RangeError) return EXIT.usage;
  if (err instanceof LeaseLostError) return EXIT.lost;
  if (err instanceof StaleTokenError || err instanceof LeaseNotHeldError || err instanceof GenerationNotIssuedError) return EXIT.refused;
  if (err instanceof ResourceHeldError) return EXIT.held;
  if (err instanceof LeaseNotFoundError) return EXIT.notFound;
  if (err instanceof TimeoutError) return EXIT.timeout;
  if (err instanceof UnavailableError) return EXIT.unavailable;
  if (err instanceof InvalidArgumentError || err instanceof IdempotencyKeyReusedError) return EXIT.usage;
  if (err instanceof CanceledError) return EXIT.interrupted;
  if (err instanceof FencekeeperError) return EXIT.failed;
  return EXIT.failed;
}
