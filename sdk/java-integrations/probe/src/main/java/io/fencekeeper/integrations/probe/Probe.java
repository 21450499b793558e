package io.fencekeeper.integrations.probe;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.FencekeeperException;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.LeaseLostException;
import io.fencekeeper.client.Token;
import io.fencekeeper.client.WriteOptions;
import io.fencekeeper.integrations.CurrentLease;
import io.fencekeeper.integrations.shedlock.FencekeeperLockProvider;
import io.fencekeeper.integrations.spring.FencekeeperLockRegistry;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;

/**
 * A scheduled job guarded by one of the integrations, as a process: every --every-ms it runs the job
 * through ShedLock's LockingTaskExecutor (`shedlock`) or under a Spring Integration lock through the
 * registry's executeLocked (`spring`). The job reads its lease from CurrentLease and writes --key through it
 * every --every-ms until it is told to finish (stdin `finish`), --task-ms has passed (0: one write), or a
 * write is refused; refused because the lease is lost (by the look at the lease, or by the fence), it
 * writes once more with its token straight to the fenced store, as a holder that ignored the loss would. One JSON line an event on stdout: ready, started, put, lost, forced-put,
 * finished, skipped (ShedLock: not run, the lock is held elsewhere), waiting / unlocked / unlock-failed
 * (Spring). stdin: `finish`, `quit`.
 */
public final class Probe {
  private static final Object OUT = new Object();
  private static volatile boolean finish;
  private static volatile boolean quit;
  private static volatile boolean inJob;

  public static void main(String[] argv) throws Throwable {
    if (argv.length == 0) throw new IllegalArgumentException("usage: shedlock|spring --server URL --name NAME [options]");
    String mode = argv[0];
    Map<String, String> a = new HashMap<>();
    for (int i = 1; i + 1 < argv.length; i += 2) a.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
    String server = a.getOrDefault("server", "http://127.0.0.1:50051");
    String name = a.getOrDefault("name", "job");
    String holder = a.getOrDefault("holder", "probe-" + ProcessHandle.current().pid());
    Duration ttl = Duration.ofMillis(Long.parseLong(a.getOrDefault("ttl-ms", "2000")));
    Duration atMost = Duration.ofMillis(Long.parseLong(a.getOrDefault("at-most-ms", "30000")));
    Duration atLeast = Duration.ofMillis(Long.parseLong(a.getOrDefault("at-least-ms", "0")));
    long everyMs = Long.parseLong(a.getOrDefault("every-ms", "200"));
    long taskMs = Long.parseLong(a.getOrDefault("task-ms", "-1"));
    String key = a.getOrDefault("key", "out");

    Thread main = Thread.currentThread();
    Thread stdin = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          switch (line.trim()) {
            case "finish" -> finish = true;
            case "quit" -> {
              quit = true;
              if (!inJob) main.interrupt(); // a running job sees the flag, finishes, and its lock is given up
            }
            default -> emit("error", "message", "unknown command: " + line);
          }
        }
      } catch (Exception e) {
        // stdin closed: the test is done with this process
      }
      quit = true;
      if (!inJob) main.interrupt();
    }, "stdin");
    stdin.setDaemon(true);
    stdin.start();

    try (FencekeeperClient client = FencekeeperClient.builder().servers(server.split(",")).holder(holder).build()) {
      Runnable job = () -> job(client, key, holder, everyMs, taskMs);
      // A fresh JVM's first acquire (connection, class loading) can take seconds on a busy machine, and
      // ShedLock counts lockAtMostFor and lockAtLeastFor from before it: done once on a resource of its own.
      client.acquire("probe-warmup/" + holder, AcquireOptions.ttl(Duration.ofSeconds(2))).release();
      emit("ready", "mode", mode, "holder", holder);
      if (mode.equals("shedlock")) {
        try (FencekeeperLockProvider provider = new FencekeeperLockProvider(client, "shedlock/", ttl)) {
          LockingTaskExecutor executor = new DefaultLockingTaskExecutor(provider);
          boolean skipping = false;
          while (!quit) {
            LockConfiguration config = new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
            LockingTaskExecutor.TaskResult<Void> r = executor.executeWithLock(() -> {
              emitStarted(holder, "created_at", config.getLockAtMostUntil().minus(atMost).toEpochMilli());
              job.run();
              return null;
            }, config);
            if (!r.wasExecuted() && !skipping) emit("skipped", "holder", holder); // once per run of skips
            skipping = !r.wasExecuted();
            pause(everyMs);
          }
        }
      } else if (mode.equals("spring")) {
        FencekeeperLockRegistry registry = new FencekeeperLockRegistry(client, "spring/", ttl);
        while (!quit) {
          emit("waiting", "holder", holder);
          try {
            registry.executeLocked(name, () -> {
              emitStarted(holder, "token_matches", registry.obtain(name).token().equals(CurrentLease.token().orElseThrow()));
              job.run();
            });
            emit("unlocked", "holder", holder);
          } catch (ConcurrentModificationException e) {
            emit("unlock-failed", "holder", holder, "error", e.getClass().getSimpleName(), "message", e.getMessage());
          } catch (InterruptedException e) {
            break; // quit while waiting in line
          }
          pause(everyMs);
        }
      } else {
        throw new IllegalArgumentException("unknown mode " + mode);
      }
    }
    emit("closed", "holder", holder);
    System.exit(0);
  }

  private static void emitStarted(String holder, String k, Object v) {
    Lease lease = CurrentLease.get().orElseThrow();
    Token t = lease.token();
    emit("started", "holder", holder, "resource", t.getResource(), "generation", String.valueOf(t.getGeneration()), k, v);
    lease.addLossListener(e -> emit("lost", "holder", holder, "why", String.valueOf(e.why()), "generation", String.valueOf(t.getGeneration())));
  }

  /** The guarded work: writes through the lock's lease until told to stop or refused. */
  private static void job(FencekeeperClient client, String key, String holder, long everyMs, long taskMs) {
    inJob = true;
    Lease lease = CurrentLease.get().orElseThrow();
    Token token = CurrentLease.token().orElseThrow();
    String gen = String.valueOf(token.getGeneration());
    long until = taskMs < 0 ? Long.MAX_VALUE : System.currentTimeMillis() + taskMs;
    for (int n = 0; ; n++) {
      try {
        lease.put(key, holder + " " + gen + " " + n);
        emit("put", "holder", holder, "ok", true, "generation", gen, "n", n);
      } catch (LeaseLostException e) {
        emit("put", "holder", holder, "ok", false, "generation", gen, "why", String.valueOf(e.why()));
        forced(client, token, key, holder);
        break;
      } catch (FencekeeperException e) {
        emit("put", "holder", holder, "ok", false, "generation", gen, "reason", String.valueOf(e.reason()), "code", String.valueOf(e.code()));
        // A write that passed its look at the lease just before a pause reaches the store after it, and the
        // fence refuses it: the lease is lost as surely as when the look finds it so.
        if ("STALE_TOKEN".equals(e.reason()) || "LEASE_NOT_HELD".equals(e.reason())) forced(client, token, key, holder);
        break;
      }
      if (finish || quit || System.currentTimeMillis() >= until) break;
      pause(everyMs);
      if (finish || quit) break;
    }
    finish = false;
    inJob = false;
    emit("finished", "holder", holder, "generation", gen);
  }

  /** The write a holder that ignored its loss would send: the old token, straight to the fenced store. */
  private static void forced(FencekeeperClient client, Token token, String key, String holder) {
    try {
      client.store().put(token, key, (holder + " forced").getBytes(StandardCharsets.UTF_8), WriteOptions.DEFAULT);
      emit("forced-put", "holder", holder, "ok", true, "generation", String.valueOf(token.getGeneration()));
    } catch (FencekeeperException e) {
      emit("forced-put", "holder", holder, "ok", false, "generation", String.valueOf(token.getGeneration()), "reason", String.valueOf(e.reason()),
          "error", e.getClass().getSimpleName());
    }
  }

  private static void pause(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      // quit: the loop looks at the flag
    }
  }

  static void emit(String event, Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("event", event);
    m.put("at", System.currentTimeMillis());
    for (int i = 0; i + 1 < kv.length; i += 2) m.put(String.valueOf(kv[i]), kv[i + 1]);
    String line = Json.write(m);
    synchronized (OUT) {
      System.out.println(line);
      System.out.flush();
    }
  }
}
