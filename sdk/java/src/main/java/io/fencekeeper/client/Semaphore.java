package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** Counting semaphores (docs/semaphores.md): a permit is a shared acquisition with maxHolders. */
final class Semaphore {
  private Semaphore() {}

  /** FencekeeperClient.semaphore: waits forever unless o chose otherwise (noWait, waitAtMost). */
  static Lease acquire(FencekeeperClient client, String resource, int n, AcquireOptions o) throws InterruptedException {
    if (n < 1) throw new InvalidArgumentException("a semaphore needs at least 1 permit, got " + n, Status.Code.INVALID_ARGUMENT, null, Map.of(), null);
    AcquireOptions permit = o.waitChosen() ? o : o.waitForever();
    return client.acquire(resource, permit.withShared(true).withMaxHolders(n));
  }
}
