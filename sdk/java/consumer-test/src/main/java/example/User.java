package example;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.Token;
import io.fencekeeper.client.WriteOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** The ten-line program of a user of the Java library: acquire, write under the token, release. Usage: User SERVER RESOURCE. */
public final class User {
  public static void main(String[] args) throws Exception {
    try (FencekeeperClient client = FencekeeperClient.builder().servers(args[0]).build();
        Lease lease = client.acquire(args[1], AcquireOptions.ttl(Duration.ofSeconds(2)).waitForever())) {
      Token token = lease.token();
      long fence = lease.put("greeting", "hello".getBytes(StandardCharsets.UTF_8), WriteOptions.DEFAULT).fence();
      System.out.println("ok generation " + token.getGeneration() + " fence " + fence);
    }
  }
}
