package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class BackoffTest {

  private static final ActorTestKit kit = ActorTestKit.create();

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  @Test
  void aRetryCompletesAsTheStageItRunsDoesANullValueIncluded() throws Exception {
    CompletableFuture<Void> voidRetry = Backoff.after(kit.system(), Duration.ofMillis(10),
        () -> CompletableFuture.<Void>completedFuture(null)).toCompletableFuture();
    assertNull(voidRetry.get(5, TimeUnit.SECONDS), "a CompletionStage<Void> retry completes");
    assertEquals("x", Backoff.after(kit.system(), Duration.ofMillis(10), () -> CompletableFuture.completedFuture("x"))
        .toCompletableFuture().get(5, TimeUnit.SECONDS));
    IllegalStateException failure = new IllegalStateException("refused");
    ExecutionException failed = assertThrows(ExecutionException.class, () -> Backoff.after(kit.system(),
        Duration.ofMillis(10), () -> CompletableFuture.failedFuture(failure)).toCompletableFuture().get(5, TimeUnit.SECONDS));
    assertSame(failure, failed.getCause());
    ExecutionException thrown = assertThrows(ExecutionException.class, () -> Backoff.after(kit.system(),
        Duration.ofMillis(10), () -> {
          throw failure;
        }).toCompletableFuture().get(5, TimeUnit.SECONDS));
    assertSame(failure, thrown.getCause());
  }

  @Test
  void delaysGrowByTheMultiplierUpToTheCapWithAtMostAFifthOfJitter() {
    Backoff b = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(1), 2);
    for (int i = 0; i < 50; i++) {
      long first = b.delay(0).toMillis();
      long third = b.delay(2).toMillis();
      assertTrue(first >= 100 && first <= 120, "first " + first);
      assertTrue(third >= 400 && third <= 480, "third " + third);
      assertEquals(1000, b.delay(30).toMillis(), "capped, jitter included");
    }
  }
}
