package io.fencekeeper.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ChannelCredentials;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The fencekeeper servers a client may talk to: replicas sharing one etcd, any of which serves any
 * call. A failed server makes the next one current. Each server gets two channels, opened on first
 * use: one for calls and one for the KeepAlive stream, so that dropping a hung stream's connection
 * leaves the calls on the other be.
 */
final class Servers implements AutoCloseable {
  /** Which of a server's two channels. */
  enum Use { CALLS, STREAM }

  private static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  final List<String> urls;
  private final Credentials credentials;
  private final Map<String, ManagedChannel> open = new HashMap<>();
  private int index;
  private boolean closed;

  Servers(List<String> urls, Credentials credentials) {
    if (urls.isEmpty()) throw new IllegalArgumentException("at least one server URL is needed");
    for (String url : urls) {
      if (!url.matches("https?://[^/\\s]+/?")) {
        throw new IllegalArgumentException("a server URL looks like http://127.0.0.1:50051, got \"" + url + "\"");
      }
    }
    this.urls = urls.stream().map(u -> u.replaceAll("/$", "")).toList();
    this.credentials = credentials;
  }

  synchronized String current() {
    return urls.get(index);
  }

  /** Moves on to the next server, if url is still the current one. */
  synchronized void failed(String url) {
    if (current().equals(url)) index = (index + 1) % urls.size();
  }

  synchronized ManagedChannel channel(Use use, String url) {
    if (closed) throw new CanceledException("the client is closed", io.grpc.Status.Code.CANCELLED, null, Map.of(), null);
    return open.computeIfAbsent(use + " " + url, id -> connect(url));
  }

  /** Drops a channel: its calls fail, and the next use of it opens a fresh connection. */
  synchronized void reset(Use use, String url) {
    ManagedChannel channel = open.remove(use + " " + url);
    if (channel != null) channel.shutdownNow();
  }

  @Override
  public void close() {
    List<ManagedChannel> channels;
    synchronized (this) {
      closed = true;
      channels = List.copyOf(open.values());
      open.clear();
    }
    for (ManagedChannel c : channels) c.shutdownNow();
    for (ManagedChannel c : channels) {
      try {
        c.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private ManagedChannel connect(String url) {
    ChannelCredentials channelCredentials;
    String target;
    if (url.startsWith("https://")) {
      TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder();
      try {
        if (credentials.ca() != null) tls.trustManager(credentials.ca().toFile());
        if (credentials.cert() != null || credentials.key() != null) tls.keyManager(credentials.cert().toFile(), credentials.key().toFile());
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read the TLS credentials", e);
      }
      channelCredentials = tls.build();
      target = url.substring("https://".length());
    } else {
      if (credentials.ca() != null || credentials.cert() != null || credentials.key() != null) {
        throw new IllegalArgumentException("TLS credentials need an https:// server, got " + url);
      }
      channelCredentials = InsecureChannelCredentials.create();
      target = url.substring("http://".length());
    }
    ManagedChannelBuilder<?> builder = Grpc.newChannelBuilder(target, channelCredentials);
    if (credentials.bearer() != null) builder.intercept(new Bearer());
    return builder.build();
  }

  /**
   * Sends the bearer JWT on every call. A header rather than CallCredentials, which grpc-java sends on
   * secure channels only: a loopback test server runs in cleartext.
   */
  private final class Bearer implements ClientInterceptor {
    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
        @Override
        public void start(Listener<R> listener, Metadata headers) {
          headers.put(AUTHORIZATION, "Bearer " + credentials.bearer().get());
          super.start(listener, headers);
        }
      };
    }
  }
}
