// The bounds of one Batch call as a whole; each write in it is then checked as it would be alone.
import { DomainError, invalid } from "../errors/errors.js";
import { MAX_BATCH_VALUE_BYTES, MAX_BATCH_WRITES } from "../validation/limits.js";

/** Refuses a batch that can never be taken as it is (empty, too many writes, too many bytes of values). */
export function checkBatch(writes: number, valueBytes: number): void {
  const meta = {
    writes: String(writes),
    value_bytes: String(valueBytes),
    max_writes: String(MAX_BATCH_WRITES),
    max_value_bytes: String(MAX_BATCH_VALUE_BYTES),
  };
  if (writes === 0) throw invalid("the batch has no writes; give at least one put or delete");
  if (writes > MAX_BATCH_WRITES) {
    throw new DomainError(
      "invalid_argument",
      `the batch has ${writes} writes; at most ${MAX_BATCH_WRITES} are allowed in one Batch: split it into smaller batches`,
      "BATCH_TOO_LARGE",
      meta,
    );
  }
  if (valueBytes > MAX_BATCH_VALUE_BYTES) {
    throw new DomainError(
      "invalid_argument",
      `the batch carries ${valueBytes} bytes of values; at most ${MAX_BATCH_VALUE_BYTES} bytes (2 MiB) are allowed in one Batch: split it into smaller batches`,
      "BATCH_TOO_LARGE",
      meta,
    );
  }
}
