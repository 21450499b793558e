// What one answer may weigh, and what a stream may keep for a reader that has not taken it yet.
//
// Every answer that lists things (ListResources, Describe's holders, Observe's messages, the store's
// Range) stops at a byte budget, not only at a count: a value may be 1 MiB, so a count alone lets one
// page weigh hundreds of MiB, and an answer is built whole in memory, in protobuf and again in JSON
// (values in base64, a third larger) before a byte of it is sent. The budget counts protobuf bytes; a
// page holds at least one item whatever its size (one holder with a 1 MiB value, one 1 MiB store
// entry), so an answer weighs at most the budget or one item, whichever is more: with the defaults,
// about 1 MiB in protobuf and 1.4 MiB in JSON, far below the 4 MiB message limit of common gRPC clients.
//
// A stream (Observe) keeps for its reader at most maxStreamBufferBytes of messages it has not taken,
// and all the streams of one caller at most maxCallerBufferBytes together; past either, what waits is
// dropped and the reader is told it missed changes (streams/coalescing-queue.ts). Over HTTP/2 the
// server writes a message only once the reader has taken the one before (flow control), so a stalled
// reader costs the server that buffer, one message being written, and its connection's window.
export interface AnswerBudget {
  /** Bytes (protobuf) one answer or page may take before it ends: --max-answer-bytes. */
  readonly maxAnswerBytes: number;
  /** Bytes of messages one stream keeps for a reader that has not taken them: --max-stream-buffer-bytes. */
  readonly maxStreamBufferBytes: number;
  /** The same, for all the streams of one caller on this replica together. */
  readonly maxCallerBufferBytes: number;
}

export const MIN_ANSWER_BYTES = 64 * 1024;
export const DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024;
export const DEFAULT_MAX_STREAM_BUFFER_BYTES = 2 * 1024 * 1024;
/** A caller's streams' buffers together: a few streams' worth, whatever the cap on its streams. */
export const CALLER_BUFFER_STREAMS = 4;

export const DEFAULT_ANSWER_BUDGET: AnswerBudget = {
  maxAnswerBytes: DEFAULT_MAX_ANSWER_BYTES,
  maxStreamBufferBytes: DEFAULT_MAX_STREAM_BUFFER_BYTES,
  maxCallerBufferBytes: CALLER_BUFFER_STREAMS * DEFAULT_MAX_STREAM_BUFFER_BYTES,
};

/** What a budget's stream settings make of one per-stream figure. */
export function answerBudget(maxAnswerBytes: number, maxStreamBufferBytes: number): AnswerBudget {
  return { maxAnswerBytes, maxStreamBufferBytes, maxCallerBufferBytes: CALLER_BUFFER_STREAMS * maxStreamBufferBytes };
}

/**
 * A holder's protobuf bytes in an answer, as an upper bound: its value (when sent), its label, its
 * principal (twice: the holder's and its token's), the resource (in its token), and room for the
 * numbers, the signature and the framing.
 */
export function holderBytes(resource: string, h: { holder: string; holderPrincipal?: string; value?: Uint8Array }, withValue: boolean): number {
  const principal = Buffer.byteLength(h.holderPrincipal ?? "");
  return (withValue ? (h.value?.byteLength ?? 0) : 0) + Buffer.byteLength(h.holder) + 2 * principal + Buffer.byteLength(resource) + HOLDER_OVERHEAD;
}

/** A description's or an Observe message's own fields, besides its holders, as an upper bound. */
export const STATE_OVERHEAD = 512;
const HOLDER_OVERHEAD = 192;
