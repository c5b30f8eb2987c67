package io.fencepost.kafka;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;

import org.apache.pekko.actor.typed.ActorSystem;

/**
 * The one backoff policy of a pipeline: exponential from {@code min} by {@code multiplier}, capped
 * at {@code max}, plus up to 20% jitter (still capped), so partitions retrying together spread out.
 */
record Backoff(Duration min, Duration max, double multiplier) {

  /** The delay before retry number {@code attempt} (0 for the first retry). */
  Duration delay(int attempt) {
    double base = min.toMillis() * Math.pow(multiplier, Math.min(attempt, 30));
    long capped = (long) Math.min(max.toMillis(), base);
    long jitter = (long) (capped * 0.2 * ThreadLocalRandom.current().nextDouble());
    return Duration.ofMillis(Math.min(max.toMillis(), capped + jitter));
  }

  /**
   * Runs {@code next} after {@code delay} on the system's scheduler; completes as the stage it returns
   * does, with a null value too. (Pekko's {@code Patterns.after} never completes when that stage
   * completes with null, as every {@code CompletionStage<Void>} does: a retried dead-letter publication
   * that then succeeded held its partition forever.)
   */
  static <T> CompletionStage<T> after(ActorSystem<?> system, Duration delay, Supplier<CompletionStage<T>> next) {
    CompletableFuture<T> result = new CompletableFuture<>();
    try {
      system.scheduler().scheduleOnce(delay, () -> {
        try {
          next.get().whenComplete((value, error) -> {
            if (error != null) {
              result.completeExceptionally(error);
            } else {
              result.complete(value);
            }
          });
        } catch (RuntimeException e) {
          result.completeExceptionally(e);
        }
      }, system.executionContext());
    } catch (IllegalStateException e) {
      result.completeExceptionally(e);   // the scheduler refuses: the system is shutting down
    }
    return result;
  }
}
