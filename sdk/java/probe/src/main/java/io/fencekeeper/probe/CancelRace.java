package io.fencekeeper.probe;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.CanceledException;
import io.fencekeeper.client.Credentials;
import io.fencekeeper.client.Description;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.Lease;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * cancel-race: waiting acquires canceled at the moment their turn comes leave nothing held (as
 * sdk/python/tests/cancel_race.py). Each round a holder takes the resource, `waiters` clients wait in line
 * (acquireAsync; each on its own session with --sessions), then the holder releases while every waiter's
 * future is canceled, after a delay that moves through the grant's window. Then the resource must be free
 * within a second (describe). Prints one JSON line; exit 1 on a leak.
 */
final class CancelRace {
  private CancelRace() {}

  static int run(Map<String, String> flags, Credentials credentials, boolean sessions) throws Exception {
    String resource = flags.get("resource");
    int rounds = Integer.parseInt(flags.getOrDefault("rounds", "20"));
    int waiters = Integer.parseInt(flags.getOrDefault("waiters", "4"));
    List<FencekeeperClient> clients = new ArrayList<>();
    for (int i = 0; i <= waiters; i++) {
      clients.add(FencekeeperClient.builder().servers(flags.get("server")).credentials(credentials).sessions(sessions).build());
    }
    FencekeeperClient first = clients.get(0);
    Random rng = new Random(7);
    AcquireOptions ttl = AcquireOptions.ttl(Duration.ofSeconds(10));
    String leak = null;
    try {
      for (int n = 0; n < rounds && leak == null; n++) {
        Lease holder = first.acquire(resource, ttl.waitAtMost(Duration.ofSeconds(10)).withHolder("holder"));
        List<CompletableFuture<Lease>> waiting = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
          waiting.add(clients.get(i + 1).acquireAsync(resource, ttl.waitForever().withHolder("waiter-" + n + "-" + i)));
        }
        for (int t = 0; first.describe(resource).waiters() < waiters; t++) {
          if (t > 1000) throw new IllegalStateException("round " + n + ": the waiters never all stood in line");
          Thread.sleep(10);
        }
        CompletableFuture<Void> releasing = CompletableFuture.runAsync(holder::release);
        TimeUnit.MICROSECONDS.sleep(rng.nextInt(20_000));
        for (CompletableFuture<Lease> w : waiting) w.cancel(true);
        releasing.join();
        for (CompletableFuture<Lease> w : waiting) {
          try {
            w.get(10, TimeUnit.SECONDS).release();
          } catch (CancellationException e) {
            // Canceled.
          } catch (ExecutionException | CompletionException e) {
            if (!(e.getCause() instanceof CanceledException)) throw e;
          }
        }
        long freeBy = System.nanoTime() + 1_000_000_000L;
        for (;;) {
          Description d = first.describe(resource);
          if (!d.held()) break;
          if (System.nanoTime() > freeBy) {
            leak = "{\"round\": " + n + ", \"holder\": \"" + d.holder() + "\", \"generation\": " + (d.token() != null ? d.token().getGeneration() : -1) + "}";
            break;
          }
          Thread.sleep(20);
        }
      }
    } finally {
      for (FencekeeperClient c : clients) c.close();
    }
    System.out.println("{\"rounds\": " + rounds + ", \"leaks\": [" + (leak == null ? "" : leak) + "]}");
    return leak == null ? 0 : 1;
  }
}
