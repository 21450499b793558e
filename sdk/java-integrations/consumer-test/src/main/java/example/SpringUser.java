package example;

import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.Token;
import io.fencekeeper.integrations.CurrentLease;
import io.fencekeeper.integrations.shedlock.FencekeeperLockProvider;
import io.fencekeeper.integrations.spring.FencekeeperLockRegistry;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * A Spring application configured as ShedLock's and Spring Integration's documentation show, with
 * fencekeeper in the two backend lines: a @Scheduled job under @SchedulerLock that writes through its lock's
 * lease, then a LockRegistry lock taken and given up as a java.util.concurrent.locks.Lock. Prints one line
 * per step ("scheduled generation N", "registry generation N") and exits 0. Usage: SpringUser SERVER.
 */
public final class SpringUser {
  static final CountDownLatch RUNS = new CountDownLatch(2);

  @Configuration
  @EnableScheduling
  @EnableSchedulerLock(defaultLockAtMostFor = "PT10S")
  static class MySpringConfiguration {
    @Bean(destroyMethod = "close")
    FencekeeperClient fencekeeper() {
      return FencekeeperClient.builder().servers(System.getProperty("fencekeeper.url")).build();
    }

    @Bean
    public LockProvider lockProvider(FencekeeperClient fencekeeper) {
      return new FencekeeperLockProvider(fencekeeper);
    }

    @Bean
    public LockRegistry<?> lockRegistry(FencekeeperClient fencekeeper) {
      return new FencekeeperLockRegistry(fencekeeper, "spring/", Duration.ofSeconds(2));
    }

    @Bean
    Jobs jobs() {
      return new Jobs();
    }
  }

  static class Jobs {
    @Scheduled(fixedDelay = 200)
    @SchedulerLock(name = "report", lockAtMostFor = "PT5S")
    public void report() {
      LockAssert.assertLocked();
      Lease lease = CurrentLease.get().orElseThrow();
      lease.put("latest", "report " + lease.token().getGeneration());
      System.out.println("scheduled generation " + lease.token().getGeneration());
      RUNS.countDown();
    }
  }

  public static void main(String[] args) throws Exception {
    System.setProperty("fencekeeper.url", args[0]);
    try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext(MySpringConfiguration.class)) {
      if (!RUNS.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("the scheduled job did not run twice");
      LockRegistry<?> registry = context.getBean(LockRegistry.class);
      Lock lock = registry.obtain("orders");
      lock.lock();
      try {
        Token token = CurrentLease.token().orElseThrow();
        CurrentLease.get().orElseThrow().put("latest", "orders " + token.getGeneration());
        System.out.println("registry generation " + token.getGeneration());
      } finally {
        lock.unlock();
      }
    }
  }
}
