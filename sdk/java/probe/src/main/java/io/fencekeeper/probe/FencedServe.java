package io.fencekeeper.probe;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.fencekeeper.client.FencedEndpoint;
import io.fencekeeper.client.FencedHttpFilter;
import io.fencekeeper.client.FencedServerInterceptor;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.MemoryFenceStore;
import io.fencekeeper.client.Token;
import io.fencekeeper.client.TokenKeyCache;
import io.fencekeeper.v1.FencedStoreServiceGrpc;
import io.fencekeeper.v1.PutRequest;
import io.fencekeeper.v1.PutResponse;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A service that owns its items, fenced with FencedEndpoint, for test/fenced-http/java.test.ts:
 *
 *   FencedServe --server URL
 *
 * serves on loopback, on ports of its own, and prints {"http": URL, "grpc": URL} as one line, then runs
 * until stdin ends. HTTP (the JDK's HttpServer, behind FencedHttpFilter): PUT /items/<resource> writes the
 * body as the resource's item (a body "slow..." takes 400 ms); GET /items/<resource> answers {"value", "generation"}; GET /admits how
 * many times the fence store was asked. gRPC (behind FencedServerInterceptor): FencedStoreService.Put
 * writes value as the item of request.resource.
 */
public final class FencedServe {
  private static final Map<String, String[]> items = new ConcurrentHashMap<>();

  public static void main(String[] args) throws Exception {
    String server = args.length == 2 && args[0].equals("--server") ? args[1] : null;
    if (server == null) {
      System.err.println("usage: FencedServe --server URL");
      System.exit(2);
    }
    FencekeeperClient client = FencekeeperClient.builder().servers(server).build();
    MemoryFenceStore store = new MemoryFenceStore();
    FencedEndpoint endpoint = new FencedEndpoint(new TokenKeyCache(client::tokenKeys, Duration.ofMinutes(1)), store);

    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    http.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    http.createContext("/admits", ex -> answer(ex, 200, "{\"admits\":" + store.admits() + "}"));
    http.createContext("/items/", ex -> {
      String resource = URLDecoder.decode(ex.getRequestURI().getRawPath().substring("/items/".length()), StandardCharsets.UTF_8);
      if (ex.getRequestMethod().equals("PUT")) {
        Token t = (Token) ex.getAttribute(FencedHttpFilter.TOKEN_ATTRIBUTE);
        String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        if (body.startsWith("slow")) {
          try {
            Thread.sleep(400);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        items.put(resource, new String[] {body, Long.toString(t.getGeneration())});
        answer(ex, 200, Json.write(Map.of("written", body)));
      } else {
        String[] item = items.get(resource);
        answer(ex, item == null ? 404 : 200, item == null ? "{}" : Json.write(Map.of("value", item[0], "generation", item[1])));
      }
    }).getFilters().add(new FencedHttpFilter(endpoint, ex -> ex.getRequestMethod().equals("PUT")
        ? URLDecoder.decode(ex.getRequestURI().getRawPath().substring("/items/".length()), StandardCharsets.UTF_8) : null));
    http.start();

    FencedStoreServiceGrpc.FencedStoreServiceImplBase service = new FencedStoreServiceGrpc.FencedStoreServiceImplBase() {
      @Override
      public void put(PutRequest req, StreamObserver<PutResponse> out) {
        Token t = FencedServerInterceptor.TOKEN.get();
        items.put(req.getResource(), new String[] {req.getValue().toStringUtf8(), Long.toString(t.getGeneration())});
        out.onNext(PutResponse.getDefaultInstance());
        out.onCompleted();
      }
    };
    FencedServerInterceptor fenced = new FencedServerInterceptor(endpoint, (method, message) -> message instanceof PutRequest p ? p.getResource() : null);
    Server grpc = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create()).addService(ServerInterceptors.intercept(service, fenced)).build().start();

    System.out.println(Json.write(Map.of("http", "http://127.0.0.1:" + http.getAddress().getPort(), "grpc", "http://127.0.0.1:" + grpc.getPort())));
    System.out.flush();
    System.in.readAllBytes();
    grpc.shutdownNow();
    http.stop(0);
    client.close();
    System.exit(0);
  }

  private static void answer(HttpExchange ex, int status, String json) throws IOException {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", "application/json");
    ex.sendResponseHeaders(status, body.length);
    ex.getResponseBody().write(body);
    ex.close();
  }
}
