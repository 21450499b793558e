package io.fencekeeper.client;

/**
 * The service's own fence per resource, which FencedEndpoint asks before a write goes on
 * (docs/fenced-http.md). Implement it on the store the service already runs: one row or key per resource
 * holding the greatest generation admitted. MemoryFenceStore is the single-process one.
 */
public interface FenceStore {
  /** The answer: admitted, and the fence (the generation admitted, or when refused the newer one in force). */
  record Verdict(boolean admitted, long fence) {}

  /**
   * Atomically for one resource: refuses a generation below its fence, otherwise raises the fence to it.
   * A resource never seen admits any generation.
   */
  Verdict admit(String resource, long generation) throws Exception;
}
