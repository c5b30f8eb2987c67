package io.fencepost.kafka;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;

import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.pattern.Patterns;

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

  /** Runs {@code next} after {@code delay} on the system's scheduler. */
  static <T> CompletionStage<T> after(ActorSystem<?> system, Duration delay, Supplier<CompletionStage<T>> next) {
    return Patterns.after(delay, system.classicSystem().scheduler(), system.executionContext(), next::get);
  }
}
