// The Java worker of the peers benchmark: the Go worker's workloads and protocol (bench/peers/go/main.go)
// on fencekeeper's Java SDK and on Apache Curator's recipes (InterProcessMutex, LeaderLatch,
// InterProcessSemaphoreV2) over ZooKeeper.
//   java -jar peers-java.jar --system fk|fk-sessions|curator-mutex|curator-latch|curator-semaphore --workload W ...
package io.fencekeeper.bench.peers;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.StaleTokenException;
import io.fencekeeper.client.WriteOptions;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class Main {
  /** One client of a system: acquires (waiting) and returns what it holds. */
  interface Locker extends AutoCloseable {
    Held acquire(String resource) throws Exception;

    @Override
    void close();
  }

  interface Held {
    void release() throws Exception;

    /** Each way the system offers of writing as the holder, with whether the store took it. */
    List<String> write(String key, String value);

    boolean alive();
  }

  static final BufferedReader STDIN = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
  static final Map<String, String> ARGS = new HashMap<>();

  static synchronized void emit(String json) {
    System.out.println(json);
    System.out.flush();
  }

  static String q(String s) {
    if (s == null) return "\"\"";
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  static String result(String how, boolean accepted, String error) {
    return "{\"how\":" + q(how) + ",\"accepted\":" + accepted + (error != null ? ",\"error\":" + q(error) : "") + "}";
  }

  static void await(String word) throws Exception {
    String line = STDIN.readLine();
    if (line == null) System.exit(0); // the driver went away
    if (!line.trim().equals(word)) throw new IllegalStateException("expected \"" + word + "\" from the driver, got \"" + line + "\"");
  }

  static String arg(String name, String fallback) {
    return ARGS.getOrDefault(name, fallback);
  }

  public static void main(String[] argv) throws Exception {
    for (int i = 0; i + 1 < argv.length; i += 2) ARGS.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
    String system = arg("system", "");
    String workload = arg("workload", "");
    String prefix = arg("prefix", "peers");
    Duration ttl = Duration.ofMillis((long) (Double.parseDouble(arg("ttl", "10")) * 1000));
    try {
      switch (workload) {
        case "cycles" -> {
          // Each level of lockers in turn, a ready/go/done exchange each.
          Locker l = open(system, ttl);
          for (String lockers : arg("lockers", "1").split(",")) cycles(l, prefix, Integer.parseInt(lockers.trim()), Double.parseDouble(arg("seconds", "5")));
          await("close");
          l.close();
        }
        case "handover" -> handover(open(system, ttl), open(system, ttl), prefix + "-handover", Double.parseDouble(arg("seconds", "5")));
        case "crash-holder" -> {
          open(system, ttl).acquire(prefix + "-crash");
          emit("{\"event\":\"held\"}");
          Thread.sleep(Long.MAX_VALUE);
        }
        case "crash-waiter" -> {
          Locker l = open(system, ttl);
          emit("{\"event\":\"waiting\"}");
          Held h = l.acquire(prefix + "-crash");
          emit("{\"event\":\"granted\"}");
          h.release();
          l.close();
        }
        case "hold" -> hold(open(system, ttl), prefix, Integer.parseInt(arg("count", "10000")));
        case "timeline-holder" -> {
          Locker l = open(system, ttl);
          Held h = l.acquire(prefix + "-timeline");
          h.write("k", "holder-before-pause");
          emit("{\"event\":\"held\"}");
          await("write");
          List<String> writes = h.write("k", "holder-after-pause");
          emit("{\"event\":\"done\",\"writes\":[" + String.join(",", writes) + "],\"believedHeld\":" + h.alive() + "}");
        }
        case "timeline-other" -> {
          Locker l = open(system, ttl);
          Held h = l.acquire(prefix + "-timeline");
          List<String> writes = h.write("k", "next-holder");
          emit("{\"event\":\"done\",\"writes\":[" + String.join(",", writes) + "]}");
          await("release");
          h.release();
          l.close();
        }
        default -> throw new IllegalArgumentException("unknown --workload \"" + workload + "\"");
      }
    } catch (Exception e) {
      System.err.println("peers-java: " + e);
      e.printStackTrace();
      System.exit(2);
    }
    System.exit(0);
  }

  static Locker open(String system, Duration ttl) throws Exception {
    return switch (system) {
      case "fk", "fk-sessions" -> new Fencekeeper(arg("fk", ""), system.equals("fk-sessions"), ttl);
      case "curator-mutex", "curator-latch", "curator-semaphore" -> new Curator(arg("zk", ""), system, ttl);
      default -> throw new IllegalArgumentException("unknown --system \"" + system + "\"");
    };
  }

  static void cycles(Locker l, String prefix, int lockers, double seconds) throws Exception {
    firstError.set("");
    run(l, prefix, lockers, Math.min(1, seconds / 4), null); // warm-up: connections, JIT
    emit("{\"event\":\"ready\"}");
    await("go");
    List<Long> lat = Collections.synchronizedList(new ArrayList<>());
    long start = System.nanoTime();
    long[] counts = run(l, prefix, lockers, seconds, lat);
    double elapsed = (System.nanoTime() - start) / 1e9;
    emit("{\"event\":\"done\",\"cycles\":" + counts[0] + ",\"errors\":" + counts[1] + ",\"firstError\":" + q(firstError.get()) + ",\"seconds\":" + elapsed
        + ",\"perSecond\":" + counts[0] / elapsed + ",\"p50Ms\":" + percentile(lat, 0.5) + ",\"p99Ms\":" + percentile(lat, 0.99) + "}");
  }

  static final AtomicReference<String> firstError = new AtomicReference<>("");

  static long[] run(Locker l, String prefix, int lockers, double seconds, List<Long> lat) throws Exception {
    AtomicLong ops = new AtomicLong();
    AtomicLong errs = new AtomicLong();
    long deadline = System.nanoTime() + (long) (seconds * 1e9);
    List<Thread> threads = new ArrayList<>();
    for (int w = 0; w < lockers; w++) {
      String resource = prefix + "-" + lockers + "-" + w;
      Thread t = new Thread(() -> {
        List<Long> mine = new ArrayList<>();
        while (System.nanoTime() < deadline) {
          long s = System.nanoTime();
          try {
            l.acquire(resource).release();
            ops.incrementAndGet();
            mine.add(System.nanoTime() - s);
          } catch (Exception e) {
            errs.incrementAndGet();
            firstError.compareAndSet("", e.toString());
            try {
              Thread.sleep(10);
            } catch (InterruptedException ie) {
              return;
            }
          }
        }
        if (lat != null) lat.addAll(mine);
      });
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) t.join();
    return new long[] {ops.get(), errs.get()};
  }

  static void handover(Locker holder, Locker waiter, String resource, double seconds) throws Exception {
    ExecutorService pool = Executors.newCachedThreadPool();
    for (int i = 0; i < 3; i++) handoverOnce(holder, waiter, resource, pool);
    emit("{\"event\":\"ready\"}");
    await("go");
    List<Long> lat = new ArrayList<>();
    List<Long> rel = new ArrayList<>();
    int errs = 0;
    String first = "";
    long deadline = System.nanoTime() + (long) (seconds * 1e9);
    while (System.nanoTime() < deadline || lat.size() < 5) {
      try {
        long[] r = handoverOnce(holder, waiter, resource, pool);
        lat.add(r[0]);
        rel.add(r[1]);
      } catch (Exception e) {
        errs++;
        if (first.isEmpty()) first = e.toString();
        if (errs > 10) break;
      }
    }
    emit("{\"event\":\"done\",\"handovers\":" + lat.size() + ",\"errors\":" + errs + ",\"firstError\":" + q(first) + ",\"p50Ms\":" + percentile(lat, 0.5)
        + ",\"p99Ms\":" + percentile(lat, 0.99) + ",\"releaseP50Ms\":" + percentile(rel, 0.5) + "}");
    await("close");
    pool.shutdownNow();
    holder.close();
    waiter.close();
  }

  /** The waiter asks 20 ms before the holder releases; from the release call's start to the grant. */
  static long[] handoverOnce(Locker holder, Locker waiter, String resource, ExecutorService pool) throws Exception {
    Held h = holder.acquire(resource);
    // The waiter releases on its own thread: Curator's InterProcessMutex belongs to the thread that took it.
    CompletableFuture<Long> granted = CompletableFuture.supplyAsync(() -> {
      try {
        Held w = waiter.acquire(resource);
        long at = System.nanoTime();
        w.release();
        return at;
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    }, pool);
    Thread.sleep(20);
    long start = System.nanoTime();
    h.release();
    long released = System.nanoTime() - start;
    return new long[] {granted.get(30, TimeUnit.SECONDS) - start, released};
  }

  static void hold(Locker l, String prefix, int count) throws Exception {
    Held[] hs = new Held[count];
    AtomicInteger next = new AtomicInteger();
    AtomicReference<String> first = new AtomicReference<>("");
    long start = System.nanoTime();
    List<Thread> threads = new ArrayList<>();
    for (int w = 0; w < 64; w++) {
      Thread t = new Thread(() -> {
        for (int i; (i = next.getAndIncrement()) < count; ) {
          try {
            hs[i] = l.acquire(prefix + "-" + i);
          } catch (Exception e) {
            first.compareAndSet("", e.toString());
          }
        }
      });
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) t.join();
    int acquired = 0;
    for (Held h : hs) if (h != null) acquired++;
    emit("{\"event\":\"ready\",\"acquired\":" + acquired + ",\"acquireSeconds\":" + (System.nanoTime() - start) / 1e9 + ",\"firstError\":" + q(first.get()) + "}");
    await("go");
    await("stop");
    int alive = 0;
    for (Held h : hs) if (h != null && h.alive()) alive++;
    emit("{\"event\":\"done\",\"acquired\":" + acquired + ",\"stillHeld\":" + alive + "}");
    await("close");
    l.close();
  }

  static double percentile(List<Long> xs, double p) {
    if (xs.isEmpty()) return -1;
    List<Long> s = new ArrayList<>(xs);
    Collections.sort(s);
    return s.get((int) (p * (s.size() - 1) + 0.5)) / 1e6;
  }

  /** fencekeeper's Java SDK: acquire waiting + release; a lease per acquisition, or on a session. */
  static final class Fencekeeper implements Locker {
    final FencekeeperClient client;
    final Duration ttl;

    Fencekeeper(String url, boolean sessions, Duration ttl) {
      this.client = FencekeeperClient.builder().servers(url).sessions(sessions).holder("bench-peers").build();
      this.ttl = ttl;
    }

    @Override
    public Held acquire(String resource) throws Exception {
      Lease lease = client.acquire(resource, AcquireOptions.ttl(ttl).waitForever());
      return new Held() {
        @Override
        public void release() {
          lease.release();
        }

        @Override
        public boolean alive() {
          return lease.isHeld();
        }

        @Override
        public List<String> write(String key, String value) {
          List<String> out = new ArrayList<>();
          try {
            client.store().put(lease.token(), key, value.getBytes(StandardCharsets.UTF_8), WriteOptions.DEFAULT);
            out.add(result("fenced store Put with the holder's token", true, null));
          } catch (StaleTokenException e) {
            out.add(result("fenced store Put with the holder's token", false, "refused by the fenced store: stale token"));
          } catch (RuntimeException e) {
            out.add(result("fenced store Put with the holder's token", false, e.toString()));
          }
          return out;
        }
      };
    }

    @Override
    public void close() {
      client.close();
    }
  }

  /** Curator on ZooKeeper: one CuratorFramework (one ZooKeeper session) per locker, a recipe per acquisition. */
  static final class Curator implements Locker {
    final CuratorFramework client;
    final String recipe;

    Curator(String connect, String recipe, Duration ttl) throws InterruptedException {
      this.client = CuratorFrameworkFactory.newClient(connect, (int) ttl.toMillis(), 15_000, new ExponentialBackoffRetry(100, 10));
      this.recipe = recipe;
      client.start();
      if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("ZooKeeper at " + connect + ": not connected within 30 s");
    }

    @Override
    public Held acquire(String resource) throws Exception {
      String path = "/peers/" + resource;
      switch (recipe) {
        case "curator-mutex" -> {
          InterProcessMutex m = new InterProcessMutex(client, path);
          m.acquire();
          return held(m::release, m::isAcquiredInThisProcess);
        }
        case "curator-latch" -> {
          LeaderLatch latch = new LeaderLatch(client, path);
          latch.start();
          latch.await();
          return held(latch::close, latch::hasLeadership);
        }
        default -> {
          InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path, 1);
          var lease = sem.acquire();
          return held(() -> sem.returnLease(lease), () -> client.getZookeeperClient().isConnected());
        }
      }
    }

    interface Action {
      void run() throws Exception;
    }

    interface Check {
      boolean get();
    }

    Held held(Action release, Check alive) {
      return new Held() {
        @Override
        public void release() throws Exception {
          release.run();
        }

        @Override
        public boolean alive() {
          return alive.get();
        }

        @Override
        public List<String> write(String key, String value) {
          try {
            client.create().orSetData().creatingParentsIfNeeded().forPath("/peers-store/" + key, value.getBytes(StandardCharsets.UTF_8));
            return List.of(result("create().orSetData() of a znode (ZooKeeper has no fence)", true, null));
          } catch (Exception e) {
            return List.of(result("create().orSetData() of a znode (ZooKeeper has no fence)", false, e.toString()));
          }
        }
      };
    }

    @Override
    public void close() {
      client.close();
    }
  }
}
