package io.fencekeeper.probe;

import static io.fencekeeper.probe.Scenario.check;
import static io.fencekeeper.probe.Scenario.expect;
import static io.fencekeeper.probe.Scenario.step;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.ClientEvent;
import io.fencekeeper.client.Credentials;
import io.fencekeeper.client.Election;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.InvalidArgumentException;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.LeaseLostException;
import io.fencekeeper.client.LossCause;
import io.fencekeeper.client.ResourceHeldException;
import com.google.protobuf.ByteString;
import io.fencekeeper.v1.CloseSessionRequest;
import io.fencekeeper.v1.LeaseServiceGrpc;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.IntStream;

/**
 * What sessions promise (docs/client.md, "Sessions"), through the library: leases of one TTL share one
 * session, each with a generation of its own, also when they ask at once; a second acquisition of a resource the session holds goes
 * on a lease of its own (ALREADY_ACQUIRED), and so fails fast as without sessions; releasing one leaves
 * the others held; an Acquire on a session closed behind the client's back loses it with all its leases,
 * at once, and is tried again on a new one; close() closes the sessions with the leases on them.
 */
final class Sessions {
  private static final Duration TTL = Duration.ofSeconds(2);
  private static final Duration LONG_TTL = Duration.ofSeconds(10);

  private Sessions() {}

  static void run(String server, Credentials credentials, String resource) throws Exception {
    List<ClientEvent> events = new CopyOnWriteArrayList<>();
    // Each session's end: why, and on which thread it was noticed.
    Map<Long, String> endedBy = new ConcurrentHashMap<>();
    Consumer<ClientEvent> listener = e -> {
      events.add(e);
      if (e instanceof ClientEvent.SessionEnded ended) endedBy.put(ended.sessionId(), ended.why() + " on " + Thread.currentThread().getName());
    };
    String one = resource + "-one", two = resource + "-two", three = resource + "-three", four = resource + "-four";
    try (FencekeeperClient client = Scenario.client(server, credentials, "java-sessions", true, listener);
        FencekeeperClient other = Scenario.client(server, credentials, "java-other", false, null)) {
      Lease leaseOne = client.acquire(one, AcquireOptions.ttl(TTL));
      Lease leaseTwo = client.acquire(two, AcquireOptions.ttl(Duration.ofMillis(1500))); // rounds up to 2 s: the same session
      long session = leaseOne.token().getLeaseId();
      check(leaseOne.onSession() && leaseTwo.token().getLeaseId() == session && leaseTwo.token().getGeneration() != leaseOne.token().getGeneration(),
          "sessions: expected two leases on one session with generations of their own, got " + leaseOne.token() + " and " + leaseTwo.token());
      check(events.stream().filter(e -> e instanceof ClientEvent.SessionOpened).count() == 1, "sessions: expected one session opened");
      step("sessions: two leases on session " + session);

      // Acquisitions that ask at once, on a TTL that has no session yet, wait for one OpenSession.
      List<CompletableFuture<Lease>> atOnce = IntStream.range(0, 4)
          .mapToObj(i -> client.acquireAsync(resource + "-at-once-" + i, AcquireOptions.ttl(Duration.ofSeconds(3)))).toList();
      List<Lease> together = new ArrayList<>();
      for (CompletableFuture<Lease> f : atOnce) together.add(f.get(20, TimeUnit.SECONDS));
      check(together.stream().map(l -> l.token().getLeaseId()).distinct().count() == 1,
          "sessions: expected acquisitions at once to share one session, got " + together.stream().map(Lease::token).toList());
      check(events.stream().filter(e -> e instanceof ClientEvent.SessionOpened o && o.ttl().equals(Duration.ofSeconds(3))).count() == 1,
          "sessions: expected one OpenSession for the acquisitions at once");
      for (Lease l : together) l.release();
      step("sessions: four acquisitions at once share one session");

      // The session holds `one` already: the second acquisition goes on a lease of its own, and finds it held.
      ResourceHeldException held = expect(() -> client.acquire(one, AcquireOptions.ttl(TTL)), ResourceHeldException.class, "RESOURCE_HELD");
      check(held.holderToken() != null && held.holderToken().getGeneration() == leaseOne.token().getGeneration(),
          "sessions: expected the holder's token in the error, got " + held.holderToken());
      step("sessions: a second acquisition of a resource the session holds fails fast: RESOURCE_HELD");

      leaseOne.release();
      Thread.sleep(TTL.toMillis()); // renewals of the session go on: two stays held
      check(leaseTwo.isHeld() && other.describe(two).held(), "sessions: expected the other lease held after a release");
      check(!other.describe(one).held(), "sessions: expected the released lease's resource free");
      step("sessions: released one, the other still held");

      // A lease of its own on a client with sessions: withOwnLease(true), and a campaign unless withOwnLease(false).
      Lease own = client.acquire(one, AcquireOptions.ttl(TTL).withOwnLease(true));
      List<Lease> ownAll = client.acquireAll(List.of(resource + "-all-a", resource + "-all-b"), AcquireOptions.ttl(TTL).withOwnLease(true));
      Election.Leadership leading = client.campaign(resource + "-leader", "v", AcquireOptions.ttl(TTL));
      Election.Leadership leadingOnSession = client.campaign(resource + "-leader-session", "v", AcquireOptions.ttl(TTL).withOwnLease(false));
      check(!own.onSession() && own.token().getLeaseId() != session, "sessions: expected withOwnLease(true) to take a lease of its own, got " + own.token());
      check(ownAll.stream().noneMatch(Lease::onSession) && ownAll.get(0).token().getLeaseId() != ownAll.get(1).token().getLeaseId(),
          "sessions: expected acquireAll withOwnLease(true) to take leases of their own, got " + ownAll.stream().map(Lease::token).toList());
      check(!leading.lease().onSession(), "sessions: expected a campaign on a lease of its own, got " + leading.lease().token());
      check(leadingOnSession.lease().onSession() && leadingOnSession.lease().token().getLeaseId() == session,
          "sessions: expected a campaign withOwnLease(false) on the session, got " + leadingOnSession.lease().token());
      own.release();
      for (Lease l : ownAll) l.release();
      leading.resign();
      leadingOnSession.resign();
      check(leaseTwo.isHeld(), "sessions: expected the lease on the session held after the others' releases");
      step("sessions: withOwnLease(true) takes a lease of its own (acquire, acquireAll); a campaign takes one unless withOwnLease(false)");

      // A campaign is exclusive and publishes its value argument: options that say otherwise are refused, unsent.
      String refused = resource + "-campaign-refused";
      for (AcquireOptions o : List.of(AcquireOptions.ttl(TTL).withShared(true), AcquireOptions.ttl(TTL).withMaxHolders(2), AcquireOptions.ttl(TTL).withValue(ByteString.copyFromUtf8("v")))) {
        expect(() -> client.campaign(refused, "v", o), InvalidArgumentException.class, null);
      }
      check(other.describe(refused).waiters() == 0 && !other.describe(refused).held(), "sessions: expected the refused campaigns to send nothing");
      step("campaign refuses shared, maxHolders and a value in its options: InvalidArgumentException, nothing sent");

      // Closed behind the client's back, right after it opened (a TTL of 10 s: its first renewal is 3 s
      // away): the next Acquire on it finds it gone, loses it with every lease on it, at once, and is
      // tried again on a new session.
      Lease leaseFour = client.acquire(four, AcquireOptions.ttl(LONG_TTL));
      long gone = leaseFour.token().getLeaseId();
      closeBehindTheBack(server, gone);
      Lease leaseThree = client.acquire(three, AcquireOptions.ttl(LONG_TTL));
      LeaseLostException lost = leaseFour.lost().get(5, TimeUnit.SECONDS);
      check(lost.why() == LossCause.NOT_FOUND, "sessions: expected the lease lost NOT_FOUND with its session, got " + lost.why());
      check(leaseThree.isHeld() && leaseThree.token().getLeaseId() != gone && leaseThree.token().getLeaseId() != session,
          "sessions: expected the new lease held on a new session, got " + leaseThree.token() + " held " + leaseThree.isHeld());
      check(endedBy.containsKey(gone), "sessions: expected the session's end reported");
      check(endedBy.get(gone).equals("NOT_FOUND on " + Thread.currentThread().getName()),
          "sessions: expected the Acquire to find the session gone (NOT_FOUND on this thread), got " + endedBy.get(gone));
      check(leaseTwo.isHeld(), "sessions: expected the lease on the other session (another TTL) held");
      step("sessions: an Acquire on a session gone behind the client's back loses it with its leases, and is tried again on a new one");

      client.close();
      LeaseLostException released = leaseThree.lost().get(5, TimeUnit.SECONDS);
      check(released.why() == LossCause.RELEASED && leaseTwo.lost().getNow(null) != null && leaseTwo.lost().getNow(null).why() == LossCause.RELEASED,
          "sessions: expected close() to release the leases on the sessions, got " + released.why() + " and " + leaseTwo.lost().getNow(null));
      check(!other.describe(three).held() && !other.describe(two).held(), "sessions: expected the resources free after close()");
      step("sessions: close() closes the sessions with their leases");
    }
  }

  /** Closes a session with the raw stubs, as another program or an operator might. */
  private static void closeBehindTheBack(String server, long session) throws InterruptedException {
    ManagedChannel channel = Grpc.newChannelBuilder(server.replaceFirst("^http://", ""), InsecureChannelCredentials.create()).build();
    try {
      LeaseServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
          .closeSession(CloseSessionRequest.newBuilder().setSessionId(session).build());
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }
}
