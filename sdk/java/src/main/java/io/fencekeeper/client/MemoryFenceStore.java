package io.fencekeeper.client;

import java.util.HashMap;
import java.util.Map;

/**
 * A FenceStore in this process's memory, for tests and single-process services only: its fences are lost
 * on restart, and two processes each keep their own.
 */
public final class MemoryFenceStore implements FenceStore {
  private final Map<String, Long> fences = new HashMap<>();
  private long admits;

  @Override
  public synchronized Verdict admit(String resource, long generation) {
    admits++;
    Long fence = fences.get(resource);
    if (fence != null && fence > generation) return new Verdict(false, fence);
    fences.put(resource, generation);
    return new Verdict(true, generation);
  }

  /** How many times admit was called. */
  public synchronized long admits() {
    return admits;
  }
}
