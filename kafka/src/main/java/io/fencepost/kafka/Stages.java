package io.fencepost.kafka;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.stream.Stream;

import org.apache.pekko.Done;

/** Bounded waits on completion stages, for the ownership state machine. */
final class Stages {

  private Stages() {
  }

  /**
   * Completes when {@code previous} ended (failed counts as ended), or after {@code bound} having
   * called {@code late} with it.
   */
  static CompletionStage<Done> endedOrLate(CompletionStage<Done> previous, Duration bound, Consumer<Duration> late) {
    return previous.toCompletableFuture().exceptionally(e -> Done.getInstance())
        .completeOnTimeout(null, bound.toMillis(), TimeUnit.MILLISECONDS)
        .thenApply(done -> {
          if (done == null) {
            late.accept(bound);
          }
          return Done.getInstance();
        });
  }

  /** Waits up to {@code nanos} for every stage (failed ones count as ended); false on timeout. */
  static boolean awaitAll(Stream<? extends CompletionStage<?>> stages, long nanos) {
    CompletableFuture<?>[] all = stages.map(st -> st.toCompletableFuture().exceptionally(e -> null))
        .toArray(CompletableFuture[]::new);
    try {
      CompletableFuture.allOf(all).get(Math.max(0, nanos), TimeUnit.NANOSECONDS);
      return true;
    } catch (TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException e) {
      return true;   // unreachable: every stage swallows its own failure
    }
  }
}
