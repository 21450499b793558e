package io.fencekeeper.probe;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.ClientEvent;
import io.fencekeeper.client.Credentials;
import io.fencekeeper.client.Description;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.FencekeeperException;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.LeaseLostException;
import io.fencekeeper.client.Observation;
import io.fencekeeper.client.Ownership;
import io.fencekeeper.client.PreemptedException;
import io.fencekeeper.client.StaleTokenException;
import io.fencekeeper.client.FenceMode;
import io.fencekeeper.client.Token;
import io.fencekeeper.client.WriteOptions;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Java client library's test probe, a process that test/sdk/java.test.ts drives:
 *
 * <pre>
 * fk-sdk-probe scenario --server URL --resource R [--sessions true] [--coalesce false]
 *     the conformance scenario of test/conformance/SCENARIO.md through the library; "ok ..." per step,
 *     exit 0, or "FAIL ..." on stderr and exit 1. With sessions, A and B acquire on sessions, and a last
 *     step checks what sessions promise (Sessions.java). With --coalesce false, the client of the
 *     coalesce step sends one call a write (FencekeeperClient.Builder.coalesceWrites(false))
 * fk-sdk-probe semantics --server URL --resource PREFIX
 *     the library's own promises (Semantics.java), on resources named PREFIX-...; output as scenario's
 * fk-sdk-probe hold --server URL[,URL...] --resource R [--ttl-ms 2000] [--holder H] [--write-every-ms N] [--sessions true] [--lock-delay-ms N] [--shared true] [--preempt true]
 *     acquires R (on a session with --sessions true) and holds it, printing one JSON line per event with
 *     its wall-clock time "at" (ms): granted (token, valid_until), renewed (sent_at, confirmed_at,
 *     valid_until), session-opened (session_id), session-renewed (as renewed), stream-opened,
 *     stream-failed, lost (why, valid_until, last_seen_held_at: the last time a look found it held).
 *     With --write-every-ms, a worker thread writes key "worker" through the lease that often, as a
 *     program acting on its lease would, and prints each outcome ("put", source "worker"), until one is
 *     refused. Every write's line has attempted_at: when it was handed to the library, which looks at the
 *     lease before sending it.
 *     Commands on stdin, each answered with one line:
 *       put KEY VALUE        write through the lease (it looks at the lease first)
 *       put-token KEY VALUE  write with the token alone (FENCE_MODE_ORDER), as a program that ignored the loss
 *       state                held, valid_until
 *       release              release the lease
 *       describe             the library's describe: held, holders, lock_delay_ms, lock_delay_until
 *       observe              the first state observe() gives (now): as describe, with max_holders and value
 *       acquire              another acquire of R without waiting: ok, or the exception's class
 * fk-sdk-probe elect --server URL --resource R [--ttl-ms 2000] [--holder H] [--value V]
 *     runs the library's lead() on R and the election and semaphore commands (Elect.java)
 * fk-sdk-probe api
 *     the public members of the library's public classes whose signatures name a generated protobuf class
 *     (io.fencekeeper.v1), but deprecated ones, as one JSON object: {"generated_types_exposed": [...]}
 * fk-sdk-probe reasons
 *     the exception class the library throws for each reason of the generated ErrorReason enum (null for
 *     none), and for NOT_FOUND without a reason, as one JSON object
 * credentials: [--bearer JWT] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]
 * </pre>
 */
public final class Probe {
  private static final Set<String> FLAGS = Set.of("server", "resource", "ttl-ms", "holder", "write-every-ms", "bearer", "tls-ca", "tls-cert", "tls-key", "sessions", "lock-delay-ms", "shared", "value", "linger-ms", "preempt", "rounds", "waiters", "coalesce");

  private Probe() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1 || !Set.of("scenario", "semantics", "hold", "reasons", "api", "elect", "cancel-race").contains(args[0])) usage();
    if (args[0].equals("api")) {
      System.out.println(Json.write(Map.of("generated_types_exposed", PublicApi.generatedTypesExposed())));
      return;
    }
    if (args[0].equals("reasons")) {
      String bare = FencekeeperException.fromStatus(io.grpc.Status.NOT_FOUND.withDescription("not found")).getClass().getSimpleName();
      System.out.println(Json.write(Map.of("reasons", FencekeeperException.typesByReason(), "not_found_without_reason", bare)));
      System.exit(0);
    }
    Map<String, String> flags = new HashMap<>();
    for (int i = 1; i < args.length; i += 2) {
      if (!args[i].startsWith("--") || !FLAGS.contains(args[i].substring(2)) || i + 1 >= args.length) usage();
      flags.put(args[i].substring(2), args[i + 1]);
    }
    if (!flags.containsKey("server") || !flags.containsKey("resource")) usage();
    Credentials credentials = new Credentials(
        flags.containsKey("bearer") ? () -> flags.get("bearer") : null,
        path(flags.get("tls-ca")), path(flags.get("tls-cert")), path(flags.get("tls-key")));
    if (args[0].equals("elect")) {
      Elect.run(flags, credentials);
      System.exit(0);
    }
    if (args[0].equals("cancel-race")) System.exit(CancelRace.run(flags, credentials, sessions(flags)));
    if (!args[0].equals("hold")) {
      try {
        if (args[0].equals("scenario")) Scenario.run(flags.get("server"), credentials, flags.get("resource"), sessions(flags), !"false".equals(flags.get("coalesce")));
        else Semantics.run(flags.get("server"), credentials, flags.get("resource"));
      } catch (Scenario.Unexpected e) {
        System.err.println("FAIL " + e.getMessage());
        System.exit(1);
      } catch (FencekeeperException e) {
        System.err.println("FAIL " + e.getClass().getSimpleName() + " " + e.code() + " " + e.reason() + ": " + e.getMessage());
        System.exit(1);
      }
      System.exit(0);
    }
    hold(flags, credentials);
    System.exit(0);
  }

  private static void hold(Map<String, String> flags, Credentials credentials) throws Exception {
    String resource = flags.get("resource");
    Duration ttl = Duration.ofMillis(Long.parseLong(flags.getOrDefault("ttl-ms", "2000")));
    FencekeeperClient client = FencekeeperClient.builder()
        .servers(flags.get("server"))
        .holder(flags.getOrDefault("holder", "java-probe"))
        .credentials(credentials)
        .sessions(sessions(flags))
        .onEvent(Probe::report)
        .build();
    Duration lockDelay = Duration.ofMillis(Long.parseLong(flags.getOrDefault("lock-delay-ms", "0")));
    Lease lease = client.acquire(resource, AcquireOptions.ttl(ttl).waitForever().withLockDelay(lockDelay).withShared(Boolean.parseBoolean(flags.getOrDefault("shared", "false")))
        .withPreempt(Boolean.parseBoolean(flags.getOrDefault("preempt", "false"))));
    AtomicLong lastSeenHeldAt = new AtomicLong(System.currentTimeMillis());
    say("granted", "token", token(lease.token()), "ttl_ms", lease.ttl().toMillis(), "valid_until", ms(lease.validUntil()));
    lease.addLossListener(e -> {
      Map<String, Object> lost = new LinkedHashMap<>();
      lost.put("why", e.why().name());
      lost.put("valid_until", ms(e.validUntil()));
      lost.put("lost_at", ms(e.lostAt()));
      lost.put("last_seen_held_at", lastSeenHeldAt.get());
      if (e.getCause() instanceof PreemptedException p) {
        lost.put("reason", p.reason());
        lost.put("by_generation", String.valueOf(p.byGeneration()));
        lost.put("by_principal", p.byPrincipal());
      }
      say("lost", lost);
    });

    if (flags.containsKey("write-every-ms")) {
      long every = Long.parseLong(flags.get("write-every-ms"));
      Thread worker = new Thread(() -> {
        for (int n = 1; ; n++) {
          if (lease.isHeld()) lastSeenHeldAt.set(System.currentTimeMillis());
          byte[] value = ("java worker " + n).getBytes(StandardCharsets.UTF_8);
          Map<String, Object> result = outcome(() -> lease.put("worker", value, WriteOptions.DEFAULT));
          result.put("source", "worker");
          say("put", result);
          if (result.get("ok").equals(false)) return; // refused: as a worker would, it stops
          try {
            Thread.sleep(every);
          } catch (InterruptedException e) {
            return;
          }
        }
      }, "worker");
      worker.setDaemon(true);
      worker.start();
    }

    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      String[] words = line.trim().split(" ", 3);
      switch (words[0]) {
        case "put" -> {
          Map<String, Object> result = outcome(() -> lease.put(words[1], words[2].getBytes(StandardCharsets.UTF_8), WriteOptions.DEFAULT));
          result.put("source", "stdin");
          say("put", result);
        }
        case "put-token" -> say("put-token", outcome(() -> client.store().put(lease.token(), words[1], words[2].getBytes(StandardCharsets.UTF_8),
            WriteOptions.mode(FenceMode.ORDER))));
        case "state" -> {
          boolean held = lease.isHeld();
          if (held) lastSeenHeldAt.set(System.currentTimeMillis());
          say("state", "held", held, "valid_until", ms(lease.validUntil()));
        }
        case "release" -> {
          lease.release();
          say("released");
        }
        case "describe" -> {
          Description d = client.describe(resource);
          List<Map<String, Object>> holders = new ArrayList<>();
          for (Description.Holder h : d.holders()) holders.add(Map.of("holder", h.holder(), "generation", Long.toString(h.token().getGeneration())));
          Map<String, Object> fields = new LinkedHashMap<>();
          fields.put("held", d.held());
          fields.put("holders", holders);
          fields.put("lock_delay_ms", d.lockDelay() == null ? 0 : d.lockDelay().toMillis());
          if (d.lockDelayUntil() != null) fields.put("lock_delay_until", ms(d.lockDelayUntil()));
          say("describe", fields);
        }
        case "observe" -> {
          // The first message of observe(): the resource's state now.
          try (Observation observed = client.observe(resource)) {
            Ownership o = observed.next(Duration.ofSeconds(60));
            if (o == null) {
              say("observe", "error", "no state within 60 s");
              break;
            }
            List<Map<String, Object>> holders = new ArrayList<>();
            for (Description.Holder h : o.holders()) {
              holders.add(Map.of("holder", h.holder(), "generation", Long.toString(h.token().getGeneration()),
                  "principal", h.principal() == null ? "" : h.principal(), "value", h.value().toStringUtf8()));
            }
            Map<String, Object> fields = new LinkedHashMap<>();
            fields.put("held", o.held());
            fields.put("holders", holders);
            fields.put("lock_delay_ms", o.lockDelay() == null ? 0 : o.lockDelay().toMillis());
            if (o.lockDelayUntil() != null) fields.put("lock_delay_until", ms(o.lockDelayUntil()));
            fields.put("max_holders", o.maxHolders());
            fields.put("value", o.value().toStringUtf8());
            say("observe", fields);
          }
        }
        case "acquire" -> {
          try {
            client.acquire(resource, AcquireOptions.ttl(ttl).noWait()).release();
            say("acquire", "ok", true);
          } catch (FencekeeperException e) {
            say("acquire", "ok", false, "error", e.getClass().getSimpleName(), "reason", String.valueOf(e.reason()));
          }
        }
        default -> say("error", "message", "unknown command: " + line);
      }
    }
    client.close();
  }

  private interface Write {
    io.fencekeeper.client.Store.Commit run();
  }

  /** A write's outcome as JSON fields: ok and fence; or refused locally (the lease was lost); or the server's refusal. */
  private static Map<String, Object> outcome(Write write) {
    Map<String, Object> o = new LinkedHashMap<>();
    o.put("attempted_at", System.currentTimeMillis());
    try {
      o.put("ok", true);
      o.put("fence", Long.toString(write.run().fence()));
    } catch (LeaseLostException e) {
      o.put("ok", false);
      o.put("local", true);
      o.put("why", e.why().name());
    } catch (FencekeeperException e) {
      o.put("ok", false);
      o.put("code", e.code().name());
      o.put("reason", e.reason());
      if (e instanceof StaleTokenException stale) o.put("fence", String.valueOf(stale.fence()));
    }
    return o;
  }

  private static void report(ClientEvent event) {
    if (event instanceof ClientEvent.Renewed r) {
      say("renewed", "sent_at", ms(r.sentAt()), "confirmed_at", ms(r.confirmedAt()), "valid_until", ms(r.validUntil()));
    } else if (event instanceof ClientEvent.SessionOpened o) {
      say("session-opened", "session_id", Long.toString(o.sessionId()), "valid_until", ms(o.validUntil()));
    } else if (event instanceof ClientEvent.SessionRenewed r) {
      say("session-renewed", "session_id", Long.toString(r.sessionId()), "sent_at", ms(r.sentAt()), "confirmed_at", ms(r.confirmedAt()),
          "valid_until", ms(r.validUntil()));
    } else if (event instanceof ClientEvent.SessionEnded e) {
      say("session-ended", "session_id", Long.toString(e.sessionId()), "why", e.why().name(), "leases", e.leases());
    } else if (event instanceof ClientEvent.StreamOpened o) {
      say("stream-opened", "url", o.url());
    } else if (event instanceof ClientEvent.StreamFailed f) {
      say("stream-failed", "url", f.url(), "error", String.valueOf(f.error()));
    } else if (event instanceof ClientEvent.RenewalFailed f) {
      say("renewal-failed", "error", f.error().getMessage());
    }
  }

  static void say(String event, Object... fields) {
    Map<String, Object> map = new LinkedHashMap<>();
    for (int i = 0; i < fields.length; i += 2) map.put((String) fields[i], fields[i + 1]);
    say(event, map);
  }

  /** Prints one JSON line: the event, when it was printed ("at", wall clock ms), and its fields. */
  static synchronized void say(String event, Map<String, Object> fields) {
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("event", event);
    line.put("at", System.currentTimeMillis());
    line.putAll(fields);
    System.out.println(Json.write(line));
    System.out.flush();
  }

  static Map<String, Object> token(Token t) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("resource", t.getResource());
    json.put("generation", Long.toString(t.getGeneration()));
    json.put("lease_id", Long.toString(t.getLeaseId()));
    json.put("shared", t.isShared());
    return json;
  }

  static long ms(Instant instant) {
    return instant.toEpochMilli();
  }

  /** --sessions true: on sessions (the library's default); without it, builder().sessions(false), leases of their own. */
  private static boolean sessions(Map<String, String> flags) {
    return Boolean.parseBoolean(flags.getOrDefault("sessions", "false"));
  }

  private static Path path(String file) {
    return file == null ? null : Path.of(file);
  }

  private static void usage() {
    System.err.println("usage: fk-sdk-probe scenario|semantics|hold --server URL[,URL] --resource R [--ttl-ms N] [--holder H] [--write-every-ms N]"
        + " [--sessions true] [--lock-delay-ms N] [--bearer JWT] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]");
    System.exit(2);
  }
}
