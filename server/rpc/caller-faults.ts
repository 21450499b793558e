// A message a client sends that cannot be decoded is the client's fault. connect reports it as INTERNAL
// ("parse binary: ..."), which says the server failed and hides the cause from the client; on the
// paths connect serves (streams), a failure while reading the client's messages is INVALID_ARGUMENT.
// (The unary fast path decodes its own requests and says so itself.)
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

export const callerFaults: Interceptor = (next) => async (req) => {
  if (!req.stream) return next(req);
  return next({ ...req, message: clientMessages(req.message) });
};

async function* clientMessages<T>(source: AsyncIterable<T>): AsyncIterable<T> {
  try {
    yield* source;
  } catch (err) {
    if (err instanceof ConnectError && err.code === Code.Internal) {
      throw new ConnectError(`a message of the request cannot be read: ${err.rawMessage}`, Code.InvalidArgument);
    }
    throw err;
  }
}
