package io.fencekeeper.probe;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.Credentials;
import io.fencekeeper.client.Description;
import io.fencekeeper.client.Election;
import io.fencekeeper.client.FenceMode;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.FencekeeperException;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.LeaseLostException;
import io.fencekeeper.client.Token;
import io.fencekeeper.client.WriteOptions;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The probe's `elect`: runs the library's lead() on a resource for test/sdk/sdk-suite.ts and
 * test/sdk/election-three-languages.test.ts, printing one JSON line per event (elected, abort, deposed,
 * new-leader, and leader for each change observeLeaders() gives), and answering the commands of its stdin:
 * resign, proclaim V, leader, second (a second client's lead() in this process), semaphore R N WAIT_MS,
 * permit-write K V, describe-of R, release-permits. With --linger-ms, onElected goes on that long after its
 * loss (printing returned when it returns). At the end of stdin it stops lead() and prints stopped.
 */
final class Elect {
  private Elect() {}

  static void run(Map<String, String> flags, Credentials credentials) throws Exception {
    String resource = flags.get("resource");
    Duration ttl = Duration.ofMillis(Long.parseLong(flags.getOrDefault("ttl-ms", "2000")));
    FencekeeperClient client = FencekeeperClient.builder()
        .servers(flags.get("server"))
        .holder(flags.getOrDefault("holder", "java-probe"))
        .credentials(credentials)
        .build();
    Election.Leadership[] current = new Election.Leadership[1];
    List<Lease> permits = new ArrayList<>();
    Election.Running observing = client.observeLeaders(resource, change -> Probe.say("leader", with(leader(change.leader()), "revision", Long.toString(change.revision()))));
    long linger = Long.parseLong(flags.getOrDefault("linger-ms", "0"));
    String value = flags.getOrDefault("value", "");
    Election.Running leading = lead(client, 1, resource, ttl, value, linger, current);
    Election.Running second = null;
    FencekeeperClient secondClient = null;

    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      String[] args = line.trim().split("\\s+");
      if (args[0].isEmpty()) continue;
      Election.Leadership leadership;
      synchronized (current) {
        leadership = current[0];
      }
      try {
        if (args[0].equals("resign") && leadership != null) {
          leadership.resign();
          Probe.say("resigned", "generation", Long.toString(leadership.token().getGeneration()));
        } else if (args[0].equals("proclaim") && args.length == 2 && leadership != null) {
          try {
            Probe.say("proclaim", "ok", true, "revision", Long.toString(leadership.proclaim(args[1])));
          } catch (FencekeeperException e) {
            Probe.say("proclaim", "ok", false, "error", e.getClass().getSimpleName(), "reason", String.valueOf(e.reason()));
          }
        } else if (args[0].equals("second") && second == null) {
          secondClient = FencekeeperClient.builder().servers(flags.get("server")).holder(flags.getOrDefault("holder", "java-probe") + "-2").credentials(credentials).build();
          second = lead(secondClient, 2, resource, ttl, value, linger, current);
          Probe.say("second-started");
        } else if (args[0].equals("leader")) {
          Probe.say("leader-now", leader(client.leader(resource)));
        } else if (args[0].equals("semaphore") && args.length == 4) {
          long waitMs = Long.parseLong(args[3]);
          // WAIT_MS: 0 as long as it takes, -1 not at all, else at most that long.
          AcquireOptions o = waitMs > 0 ? AcquireOptions.ttl(ttl).waitAtMost(Duration.ofMillis(waitMs)) : waitMs < 0 ? AcquireOptions.ttl(ttl).noWait() : AcquireOptions.ttl(ttl);
          try {
            Lease permit = client.semaphore(args[1], Integer.parseInt(args[2]), o);
            permits.add(permit);
            Probe.say("permit", "ok", true, "token", Probe.token(permit.token()));
          } catch (FencekeeperException e) {
            Probe.say("permit", "ok", false, "error", e.getClass().getSimpleName(), "reason", String.valueOf(e.reason()), "code", e.code().name());
          }
        } else if (args[0].equals("permit-write") && args.length == 3 && !permits.isEmpty()) {
          try {
            long fence = permits.get(permits.size() - 1).put(args[1], args[2].getBytes(StandardCharsets.UTF_8), WriteOptions.DEFAULT.withMode(FenceMode.ORDER)).fence();
            Probe.say("permit-write", "ok", true, "fence", Long.toString(fence));
          } catch (LeaseLostException e) {
            Probe.say("permit-write", "ok", false, "sent", false, "why", e.why().name());
          } catch (FencekeeperException e) {
            Probe.say("permit-write", "ok", false, "sent", true, "reason", String.valueOf(e.reason()), "error", e.getClass().getSimpleName());
          }
        } else if (args[0].equals("describe-of") && args.length == 2) {
          Description d = client.describe(args[1]);
          List<Map<String, Object>> holders = new ArrayList<>();
          for (Description.Holder h : d.holders()) {
            holders.add(Map.of("holder", h.holder(), "generation", Long.toString(h.token().getGeneration()), "shared", h.token().isShared()));
          }
          Probe.say("described", "held", d.held(), "value", d.value().toStringUtf8(), "max_holders", d.maxHolders(), "holders", holders);
        } else if (args[0].equals("release-permits")) {
          for (Lease permit : permits) permit.release();
          permits.clear();
          Probe.say("permits-released");
        } else {
          Probe.say("error", "message", "unknown command or nothing to do it on: " + line);
        }
      } catch (FencekeeperException e) {
        Probe.say("error", "message", e.getClass().getSimpleName() + ": " + e.getMessage());
      }
    }
    leading.close();
    if (second != null) second.close();
    if (secondClient != null) secondClient.close();
    observing.close();
    Map<String, Object> stopped = new LinkedHashMap<>();
    if (leading.done().isCompletedExceptionally()) stopped.put("error", leading.done().handle((x, e) -> String.valueOf(e)).join());
    Probe.say("stopped", stopped);
    client.close();
  }

  /** A lead loop of client, its events tagged with n; onElected goes on lingerMs after its loss, as code that ignores it would. */
  private static Election.Running lead(FencekeeperClient client, int n, String resource, Duration ttl, String value, long lingerMs, Election.Leadership[] current) {
    return client.lead(resource, new Election.LeadCallbacks() {
      @Override
      public void onElected(CompletableFuture<LeaseLostException> lost, Token token, Election.Leadership leadership) throws InterruptedException {
        synchronized (current) {
          current[0] = leadership;
        }
        Probe.say("elected", "loop", n, "token", Probe.token(token), "valid_until", Probe.ms(leadership.lease().validUntil()));
        LeaseLostException e = lost.join();
        Probe.say("abort", "loop", n, "generation", Long.toString(token.getGeneration()), "why", e.why().name(), "valid_until", Probe.ms(e.validUntil()),
            "lost_at", Probe.ms(e.lostAt()));
        Thread.sleep(lingerMs);
        Probe.say("returned", "loop", n, "generation", Long.toString(token.getGeneration()));
      }

      @Override
      public void onDeposed(LeaseLostException e) {
        Probe.say("deposed", "loop", n, "generation", Long.toString(e.token().getGeneration()), "why", e.why().name());
      }

      @Override
      public void onNewLeader(Election.Leader leader) {
        Probe.say("new-leader", with(leader(leader), "loop", n));
      }
    }, AcquireOptions.ttl(ttl), value);
  }

  private static Map<String, Object> leader(Election.Leader l) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("holder", l != null ? l.holder() : null);
    json.put("generation", l != null ? Long.toString(l.token().getGeneration()) : null);
    json.put("value", l != null ? l.value().toStringUtf8() : null);
    return json;
  }

  private static Map<String, Object> with(Map<String, Object> map, String key, Object value) {
    map.put(key, value);
    return map;
  }
}
