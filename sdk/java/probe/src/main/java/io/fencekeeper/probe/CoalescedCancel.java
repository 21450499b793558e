package io.fencekeeper.probe;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.CanceledException;
import io.fencekeeper.client.DeadlineExceededException;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.FencekeeperException;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.Store;
import io.fencekeeper.client.WriteOptions;
import io.grpc.Context;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Semantics step: concurrent writes through one lease, coalesced by the client, while a quarter of the
 * writers cancel their gRPC Context, a quarter are interrupted and a quarter have a deadline, within 20 ms. Each
 * of those ends its own write only: every other write commits, with its own value, whichever call
 * carried it; and each write that ended so threw the exception its plain call would have (CanceledException,
 * with the thread still interrupted after an interrupt; DeadlineExceededException), or committed when its
 * answer came first.
 */
final class CoalescedCancel {
  private static final int WRITERS = 96;
  private static final int ROUNDS = 3;

  private CoalescedCancel() {}

  static String run(FencekeeperClient client, String resource) throws Exception {
    ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor();
    int[] counts = new int[5];
    try (Lease lease = client.acquire(resource, AcquireOptions.ttl(Duration.ofSeconds(5)))) {
      // A few rounds: which thread sends which call, and when each writer gives up, varies from one to the next.
      for (int round = 0; round < ROUNDS; round++) round(client, lease, resource, "r" + round + "-", timers, counts);
      // Nothing is left in flight or queued: the next write goes out and commits.
      Scenario.check(lease.put("after", "done").fence() == lease.token().getGeneration(), "coalesced cancel: the write after them");
    } finally {
      timers.shutdownNow();
    }
    return "coalesced writes: a writer's cancel, interrupt or deadline ends its own write only: " + counts[0] + " of " + ROUNDS * WRITERS + " committed, "
        + counts[1] + " canceled, " + counts[2] + " interrupted, " + counts[3] + " past their deadline (" + counts[4] + " of these once sent)";
  }

  /** counts: committed, canceled, interrupted, past their deadline, given up once sent. */
  private static void round(FencekeeperClient client, Lease lease, String resource, String prefix, ScheduledExecutorService timers, int[] counts) throws Exception {
    Object[] answers = new Object[WRITERS];
    boolean[] stillInterrupted = new boolean[WRITERS];
    Context.CancellableContext[] contexts = new Context.CancellableContext[WRITERS];
    Thread[] threads = new Thread[WRITERS];
    CountDownLatch go = new CountDownLatch(1);
    for (int i = 0; i < WRITERS; i++) {
      int w = i;
      contexts[w] = w % 4 == 3 ? Context.current().withDeadlineAfter(1 + w % 20, TimeUnit.MILLISECONDS, timers) : Context.current().withCancellation();
      threads[w] = new Thread(() -> {
        // An interrupt meant for the write may come while the writer still waits here: kept for the write.
        boolean interrupted = false;
        while (true) {
          try {
            go.await();
            break;
          } catch (InterruptedException e) {
            interrupted = true;
          }
        }
        if (interrupted) Thread.currentThread().interrupt();
        contexts[w].run(() -> {
          try {
            answers[w] = lease.put(prefix + w, ("value " + w).getBytes(StandardCharsets.UTF_8), WriteOptions.DEFAULT);
          } catch (FencekeeperException e) {
            answers[w] = e;
          }
          stillInterrupted[w] = Thread.currentThread().isInterrupted();
        });
      }, "writer-" + w);
      threads[w].start();
    }
    go.countDown();
    // Spread over 20 ms: some writes still wait for a free call, some are on their way in a Batch or alone.
    for (int w = 0; w < WRITERS; w++) {
      int which = w;
      if (w % 4 == 1) timers.schedule(() -> contexts[which].cancel(null), w % 20, TimeUnit.MILLISECONDS);
      else if (w % 4 == 2) timers.schedule(threads[which]::interrupt, w % 20, TimeUnit.MILLISECONDS);
    }
    for (Thread t : threads) t.join(TimeUnit.SECONDS.toMillis(30));
    List<String> expected = new ArrayList<>();
    for (int w = 0; w < WRITERS; w++) {
      Object a = answers[w];
      if (a instanceof Store.Commit c) {
        Scenario.check(c.fence() == lease.token().getGeneration(), "coalesced cancel: write " + prefix + w + " committed at fence " + c.fence());
        counts[0]++;
        expected.add(prefix + w);
        continue;
      }
      if (a instanceof FencekeeperException e && e.getMessage().contains("may or may not have been applied")) counts[4]++;
      switch (w % 4) {
        case 0 -> throw new Scenario.Unexpected("coalesced cancel: write " + prefix + w + ", whose writer gave up nothing, got " + a);
        case 1 -> {
          Scenario.check(a instanceof CanceledException, "coalesced cancel: write " + prefix + w + " (context canceled) expected CanceledException, got " + a);
          counts[1]++;
        }
        case 2 -> {
          Scenario.check(a instanceof CanceledException && stillInterrupted[w],
              "coalesced cancel: write " + prefix + w + " (interrupted) expected CanceledException with the thread still interrupted, got " + a + " interrupted " + stillInterrupted[w]);
          counts[2]++;
        }
        default -> {
          Scenario.check(a instanceof DeadlineExceededException, "coalesced cancel: write " + prefix + w + " (deadline) expected DeadlineExceededException, got " + a);
          counts[3]++;
        }
      }
    }
    Scenario.check(counts[1] + counts[2] + counts[3] > 0, "coalesced cancel: every write committed before its writer gave up: the step proved nothing");
    // Each committed write is there with its own value; one given up may or may not have applied.
    for (Store.Entry e : client.store().list(resource, prefix)) {
      int w = Integer.parseInt(e.key().substring(prefix.length()));
      Scenario.check(e.text().equals("value " + w), "coalesced cancel: " + e.key() + " holds '" + e.text() + "'");
      expected.remove(e.key());
    }
    Scenario.check(expected.isEmpty(), "coalesced cancel: committed writes missing from the store: " + expected);
  }
}
