// A streaming request's body is a sequence of envelopes: a 5-byte header (flags, then the payload's
// length) and the payload. connect reads them, but a body that ends right after a header, before any of
// the payload it announced, ends its stream as if the client had closed it cleanly: a KeepAlive whose
// only bytes were a frame header was answered OK. Cut off inside a frame, the request is malformed, and
// the caller is told so: INVALID_ARGUMENT, saying where it was cut.
import { Code, ConnectError } from "@connectrpc/connect";

const HEADER_BYTES = 5;

/** The body's chunks as they come; at its end, an error if it ended inside an envelope. */
export async function* wholeEnvelopes(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  const header = Buffer.alloc(HEADER_BYTES);
  let headerBytes = 0;
  let payloadLeft = 0;
  let frames = 0;
  for await (const chunk of body) {
    let at = 0;
    while (at < chunk.length) {
      if (payloadLeft > 0) {
        const n = Math.min(payloadLeft, chunk.length - at);
        payloadLeft -= n;
        at += n;
        if (payloadLeft === 0) frames++;
        continue;
      }
      const n = Math.min(HEADER_BYTES - headerBytes, chunk.length - at);
      header.set(chunk.subarray(at, at + n), headerBytes);
      headerBytes += n;
      at += n;
      if (headerBytes === HEADER_BYTES) {
        payloadLeft = header.readUInt32BE(1);
        headerBytes = 0;
        if (payloadLeft === 0) frames++;
      }
    }
    yield chunk;
  }
  if (headerBytes > 0) {
    throw new ConnectError(
      `the request ended inside the header of message frame ${frames + 1} (${headerBytes} of ${HEADER_BYTES} bytes); send whole frames`,
      Code.InvalidArgument,
    );
  }
  if (payloadLeft > 0) {
    const announced = header.readUInt32BE(1);
    throw new ConnectError(
      `the request ended inside message frame ${frames + 1}: its header announced ${announced} bytes, ${announced - payloadLeft} arrived; send whole frames`,
      Code.InvalidArgument,
    );
  }
}
