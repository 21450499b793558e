package io.fencekeeper.conformance;

import com.google.protobuf.ByteString;
import com.google.protobuf.Duration;
import io.fencekeeper.conformance.Rpc.Auth;
import io.fencekeeper.conformance.Rpc.Client;
import io.fencekeeper.conformance.Rpc.Failure;
import io.fencekeeper.conformance.Rpc.Unexpected;
import io.fencekeeper.v1.AcquireRequest;
import io.fencekeeper.v1.AcquireResponse;
import io.fencekeeper.v1.FencingToken;
import io.fencekeeper.v1.GetRequest;
import io.fencekeeper.v1.GetResponse;
import io.fencekeeper.v1.ListTokenKeysRequest;
import io.fencekeeper.v1.Mutation;
import io.fencekeeper.v1.PutRequest;
import io.fencekeeper.v1.ReleaseRequest;
import io.fencekeeper.v1.TokenKey;
import io.grpc.StatusRuntimeException;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The Java conformance client: the scenario of test/conformance/SCENARIO.md, and the single calls that
 * let the conformance test run it against the other languages' clients. calls runs many single calls in
 * one process, so that the tests need not start a JVM for each.
 */
public final class Main {
  private static final String USAGE = String.join("\n",
      "usage: fk-conformance COMMAND --server http(s)://host:port [flags]",
      "  scenario --resource R                      run the whole scenario of SCENARIO.md",
      "  acquire  --resource R --holder H [--ttl SECONDS]   print the token",
      "  put      --resource R --key K --value V TOKEN",
      "  get      --resource R --key K",
      "  release  --resource R TOKEN",
      "  keys                                       print the token keys (ListTokenKeys)",
      "  verify   --token-json FILE --keys-json FILE   check a token's signature offline (no --server)",
      "  calls                                      run single calls in one process: per stdin line a JSON array of",
      "                                             one call's arguments, per stdout line {\"exit\":N,\"stdout\":S,\"stderr\":S}",
      "TOKEN: --generation G --lease-id L [--principal P --key-id K --signature BASE64]",
      "credentials: [--bearer JWT] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]");
  private static final Set<String> COMMANDS = Set.of("scenario", "acquire", "put", "get", "release", "keys", "verify");
  private static final Set<String> FLAGS = Set.of(
      "server", "resource", "holder", "ttl", "key", "value", "generation", "lease-id", "principal", "key-id", "signature",
      "token-json", "keys-json", "bearer", "tls-ca", "tls-cert", "tls-key");

  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length >= 1 && args[0].equals("calls")) {
      if (args.length > 1) {
        System.err.println(USAGE);
        System.exit(2);
      }
      calls();
      System.exit(0);
    }
    int exit = runCall(args, System.out, System.err);
    if (exit != 0) System.exit(exit);
  }

  /**
   * The calls command: one single call per stdin line, given as a JSON array of its arguments (the
   * command, then its flags), one after another; for each, one stdout line once it is over, a JSON object
   * of the exit code and the stdout and stderr that the same arguments give as a process.
   */
  private static void calls() throws IOException {
    PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    // Only the answers go to stdout: whatever else would print there goes to stderr.
    System.setOut(System.err);
    BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = lines.readLine()) != null; ) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      int exit;
      try (PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
          PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8)) {
        exit = callLine(line, outStream, errStream);
      }
      Map<String, Object> answer = new LinkedHashMap<>();
      answer.put("exit", exit);
      answer.put("stdout", out.toString(StandardCharsets.UTF_8));
      answer.put("stderr", err.toString(StandardCharsets.UTF_8));
      answers.println(Json.write(answer));
    }
  }

  /** One line of calls: its arguments, run as runCall; an exception ends it as it ends the process (exit 1). */
  private static int callLine(String line, PrintStream out, PrintStream err) {
    List<String> args = new ArrayList<>();
    try {
      if (!(Json.parse(line) instanceof List<?> array)) throw new IllegalArgumentException("not an array");
      for (Object arg : array) {
        if (!(arg instanceof String s)) throw new IllegalArgumentException("an element is not a string: " + Json.write(arg));
        args.add(s);
      }
    } catch (RuntimeException e) {
      err.println("calls: a line must be a JSON array of strings (" + e.getMessage() + "): " + line);
      return 2;
    }
    if (!args.isEmpty() && (args.get(0).equals("scenario") || args.get(0).equals("calls"))) {
      err.println("calls: " + args.get(0) + " runs only as its own process");
      return 2;
    }
    try {
      return runCall(args.toArray(new String[0]), out, err);
    } catch (Exception e) {
      err.print("Exception in thread \"main\" ");
      e.printStackTrace(err);
      return 1;
    }
  }

  /**
   * One single call (or the scenario) of args: writes what it prints to out and err and returns its exit
   * code. Throws what ends the process with a stack trace.
   */
  static int runCall(String[] args, PrintStream out, PrintStream err) throws Exception {
    if (args.length < 1 || !COMMANDS.contains(args[0])) return usage(err);
    String command = args[0];
    Map<String, String> flags = new HashMap<>(Map.of("holder", "java", "ttl", "2", "key", "", "value", "", "generation", "0", "lease-id", "0"));
    for (String empty : List.of("principal", "key-id", "signature", "bearer", "tls-ca", "tls-cert", "tls-key")) flags.put(empty, "");
    for (int i = 1; i < args.length; i += 2) {
      if (!args[i].startsWith("--") || !FLAGS.contains(args[i].substring(2)) || i + 1 >= args.length) return usage(err);
      flags.put(args[i].substring(2), args[i + 1]);
    }
    if (command.equals("verify")) {
      if (!flags.containsKey("token-json") || !flags.containsKey("keys-json")) return usage(err);
      out.println(Json.write(verifyFiles(Path.of(flags.get("token-json")), Path.of(flags.get("keys-json")))));
      return 0;
    }
    if (!flags.containsKey("server") || (!command.equals("keys") && !flags.containsKey("resource"))) return usage(err);
    String resource = flags.getOrDefault("resource", "");
    Auth auth = new Auth(flags.get("bearer"), flags.get("tls-ca"), flags.get("tls-cert"), flags.get("tls-key"));

    if (command.equals("scenario")) {
      try {
        Scenario.run(flags.get("server"), auth, resource);
      } catch (Unexpected | StatusRuntimeException e) {
        err.println("FAIL " + e.getMessage());
        return 1;
      }
      return 0;
    }

    FencingToken token = FencingToken.newBuilder().setResource(resource)
        .setGeneration(Long.parseLong(flags.get("generation"))).setLeaseId(Long.parseLong(flags.get("lease-id")))
        .setPrincipal(flags.get("principal")).setKeyId(flags.get("key-id"))
        .setSignature(ByteString.copyFrom(Base64.getDecoder().decode(flags.get("signature")))).build();
    Object result;
    try (Client client = new Client(flags.get("server"), auth)) {
      switch (command) {
        case "acquire" -> {
          AcquireResponse res = client.lease.acquire(AcquireRequest.newBuilder().setResource(resource)
              .setTtl(Duration.newBuilder().setSeconds(Long.parseLong(flags.get("ttl")))).setHolder(flags.get("holder")).build());
          Map<String, Object> acquired = new LinkedHashMap<>();
          acquired.put("ok", true);
          acquired.putAll(tokenJson(res.getToken()));
          result = acquired;
        }
        case "put" -> {
          long fence = client.store.put(PutRequest.newBuilder().setResource(resource).setKey(flags.get("key"))
              .setValue(ByteString.copyFrom(flags.get("value"), StandardCharsets.UTF_8))
              .setMutation(Mutation.newBuilder().setToken(token)).build()).getCommit().getFence();
          result = Map.of("ok", true, "fence", Long.toString(fence));
        }
        case "get" -> {
          GetResponse res = client.store.get(GetRequest.newBuilder().setResource(resource).setKey(flags.get("key")).build());
          result = Map.of("ok", true, "found", res.getFound(), "value", res.getValue().toStringUtf8());
        }
        case "keys" -> {
          // The keys alone, as verify --keys-json reads them.
          List<Object> keys = new ArrayList<>();
          for (TokenKey k : client.lease.listTokenKeys(ListTokenKeysRequest.getDefaultInstance()).getKeysList()) {
            Map<String, Object> key = new LinkedHashMap<>();
            key.put("key_id", k.getKeyId());
            key.put("algorithm", k.getAlgorithm());
            key.put("public_key", Base64.getEncoder().encodeToString(k.getPublicKey().toByteArray()));
            keys.add(key);
          }
          result = keys;
        }
        default -> {
          client.lease.release(ReleaseRequest.newBuilder().setToken(token).build());
          result = Map.of("ok", true);
        }
      }
    } catch (StatusRuntimeException e) {
      Failure f = Rpc.failureOf(e);
      Map<String, Object> failed = new LinkedHashMap<>();
      failed.put("ok", false);
      failed.put("code", f.code());
      failed.put("reason", f.reason());
      result = failed;
    }
    out.println(Json.write(result));
    return 0;
  }

  private static int usage(PrintStream err) {
    err.println(USAGE);
    return 2;
  }

  /** A token as the single calls print it: 64-bit integers as decimal strings, the signature in base64. */
  private static Map<String, Object> tokenJson(FencingToken t) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("resource", t.getResource());
    json.put("generation", Long.toString(t.getGeneration()));
    json.put("lease_id", Long.toString(t.getLeaseId()));
    json.put("principal", t.getPrincipal());
    json.put("key_id", t.getKeyId());
    json.put("signature", Base64.getEncoder().encodeToString(t.getSignature().toByteArray()));
    return json;
  }

  /** Verifies the token of one JSON file with the keys of another. */
  private static Map<String, Object> verifyFiles(Path tokenFile, Path keysFile) throws Exception {
    Map<?, ?> t = (Map<?, ?>) Json.parse(Files.readString(tokenFile));
    FencingToken token = FencingToken.newBuilder()
        .setResource(field(t, "resource", ""))
        .setGeneration(Long.parseLong(field(t, "generation", "0")))
        .setLeaseId(Long.parseLong(field(t, "lease_id", "0")))
        .setPrincipal(field(t, "principal", ""))
        .setKeyId(field(t, "key_id", ""))
        .setSignature(ByteString.copyFrom(Base64.getDecoder().decode(field(t, "signature", ""))))
        .setModeValue(Integer.parseInt(field(t, "mode", "0")))
        .build();
    Map<String, byte[]> keys = new HashMap<>();
    for (Object listed : (List<?>) Json.parse(Files.readString(keysFile))) {
      Map<?, ?> k = (Map<?, ?>) listed;
      if (field(k, "algorithm", "Ed25519").equals("Ed25519")) {
        keys.put(field(k, "key_id", ""), Base64.getDecoder().decode(field(k, "public_key", "")));
      }
    }
    Verify.Outcome outcome = Verify.verify(token, keys);
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("ok", outcome == Verify.Outcome.OK);
    if (outcome != Verify.Outcome.OK) result.put("reason", outcome.name().toLowerCase(Locale.ROOT).replace('_', ' '));
    return result;
  }

  private static String field(Map<?, ?> object, String name, String orElse) {
    Object value = object.get(name);
    return value == null ? orElse : value.toString();
  }
}
