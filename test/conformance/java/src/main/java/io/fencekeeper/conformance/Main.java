package io.fencekeeper.conformance;

import com.google.protobuf.ByteString;
import com.google.protobuf.Duration;
import io.fencekeeper.conformance.Rpc.Client;
import io.fencekeeper.conformance.Rpc.Failure;
import io.fencekeeper.conformance.Rpc.Unexpected;
import io.fencekeeper.v1.AcquireRequest;
import io.fencekeeper.v1.AcquireResponse;
import io.fencekeeper.v1.FencingToken;
import io.fencekeeper.v1.GetRequest;
import io.fencekeeper.v1.GetResponse;
import io.fencekeeper.v1.Mutation;
import io.fencekeeper.v1.PutRequest;
import io.fencekeeper.v1.ReleaseRequest;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The Java conformance client: the scenario of test/conformance/SCENARIO.md, and the single calls that
 * let the conformance test run it against the other languages' clients.
 */
public final class Main {
  private static final String USAGE = String.join("\n",
      "usage: fk-conformance scenario|acquire|put|get|release --server http://host:port --resource R [flags]",
      "  scenario                                  run the whole scenario of SCENARIO.md",
      "  acquire  --holder H [--ttl SECONDS]       print the token",
      "  put      --key K --value V --generation G --lease-id L",
      "  get      --key K",
      "  release  --generation G --lease-id L");
  private static final Set<String> COMMANDS = Set.of("scenario", "acquire", "put", "get", "release");
  private static final Set<String> FLAGS = Set.of("server", "resource", "holder", "ttl", "key", "value", "generation", "lease-id");

  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1 || !COMMANDS.contains(args[0])) usage();
    Map<String, String> flags = new HashMap<>(Map.of("holder", "java", "ttl", "2", "key", "", "value", "", "generation", "0", "lease-id", "0"));
    for (int i = 1; i < args.length; i += 2) {
      if (!args[i].startsWith("--") || !FLAGS.contains(args[i].substring(2)) || i + 1 >= args.length) usage();
      flags.put(args[i].substring(2), args[i + 1]);
    }
    if (!flags.containsKey("server") || !flags.containsKey("resource")) usage();
    String resource = flags.get("resource");

    if (args[0].equals("scenario")) {
      try {
        Scenario.run(flags.get("server"), resource);
      } catch (Unexpected | StatusRuntimeException e) {
        System.err.println("FAIL " + e.getMessage());
        System.exit(1);
      }
      return;
    }

    FencingToken token = FencingToken.newBuilder().setResource(resource)
        .setGeneration(Long.parseLong(flags.get("generation"))).setLeaseId(Long.parseLong(flags.get("lease-id"))).build();
    Map<String, Object> result = new LinkedHashMap<>();
    try (Client client = new Client(flags.get("server"))) {
      switch (args[0]) {
        case "acquire" -> {
          AcquireResponse res = client.lease.acquire(AcquireRequest.newBuilder().setResource(resource)
              .setTtl(Duration.newBuilder().setSeconds(Long.parseLong(flags.get("ttl")))).setHolder(flags.get("holder")).build());
          result.put("generation", Long.toString(res.getToken().getGeneration()));
          result.put("lease_id", Long.toString(res.getToken().getLeaseId()));
        }
        case "put" -> {
          long fence = client.store.put(PutRequest.newBuilder().setResource(resource).setKey(flags.get("key"))
              .setValue(ByteString.copyFrom(flags.get("value"), StandardCharsets.UTF_8))
              .setMutation(Mutation.newBuilder().setToken(token)).build()).getCommit().getFence();
          result.put("fence", Long.toString(fence));
        }
        case "get" -> {
          GetResponse res = client.store.get(GetRequest.newBuilder().setResource(resource).setKey(flags.get("key")).build());
          result.put("found", res.getFound());
          result.put("value", res.getValue().toStringUtf8());
        }
        default -> client.lease.release(ReleaseRequest.newBuilder().setToken(token).build());
      }
      result.put("ok", true);
    } catch (StatusRuntimeException e) {
      Failure f = Rpc.failureOf(e);
      result.clear();
      result.put("ok", false);
      result.put("code", f.code());
      result.put("reason", f.reason());
    }
    System.out.println(toJson(result));
  }

  private static void usage() {
    System.err.println(USAGE);
    System.exit(2);
  }

  /** A flat JSON object of strings and booleans. */
  private static String toJson(Map<String, Object> fields) {
    StringBuilder json = new StringBuilder("{");
    for (Map.Entry<String, Object> field : fields.entrySet()) {
      if (json.length() > 1) json.append(',');
      json.append(quote(field.getKey())).append(':');
      json.append(field.getValue() instanceof Boolean ? field.getValue().toString() : quote(field.getValue().toString()));
    }
    return json.append('}').toString();
  }

  private static String quote(String s) {
    StringBuilder q = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') q.append('\\').append(c);
      else if (c < 0x20) q.append(String.format("\\u%04x", (int) c));
      else q.append(c);
    }
    return q.append('"').toString();
  }
}
