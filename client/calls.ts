// Runs one call on the current server, as a typed error when it fails. A server that cannot be reached
// (UNAVAILABLE with no ErrorInfo: the transport's verdict, not etcd's) makes the next server current. The
// call is then tried on each other server once if it is safe to repeat, or if it never left: the
// connection was refused, so the server cannot have seen it.
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../gen/ts/google/rpc/error_details_pb.js";
import { toFencekeeperError } from "./error-mapping.js";
import { UnavailableError } from "./errors.js";
import type { Connection, Servers } from "./servers.js";

export class Calls {
  constructor(
    private readonly servers: Servers,
    /** The deadline of a call that does not wait, in ms. */
    readonly timeoutMs: number,
  ) {}

  async run<T>(call: (c: Connection) => Promise<T>, repeatable: boolean): Promise<T> {
    for (let tries = 1; ; tries++) {
      const c = this.servers.connection("calls");
      try {
        return await call(c);
      } catch (err) {
        if (!unreachable(err)) throw toFencekeeperError(err);
        this.servers.failed(c.url);
        if (!(repeatable || refused(err)) || tries >= this.servers.urls.length) {
          const e = err as ConnectError;
          throw new UnavailableError(`no answer from the server at ${c.url}: ${e.rawMessage}`, e.code, undefined, {}, { cause: err });
        }
      }
    }
  }
}

function refused(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if ((e as NodeJS.ErrnoException).code === "ECONNREFUSED") return true;
  }
  return false;
}

function unreachable(err: unknown): boolean {
  return err instanceof ConnectError && err.code === Code.Unavailable && err.findDetails(ErrorInfoSchema).length === 0;
}
