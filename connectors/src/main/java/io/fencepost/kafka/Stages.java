package io.fencepost.kafka;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;

import org.apache.pekko.Done;

/** Bounded waits on completion stages: the ownership state machine's, and asks' answers. */
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

  /**
   * The stage {@code ask} starts, as a plain future that completes on {@code executor}, within
   * {@code bound} on the JDK's timer, and fails instead of throwing when the ask cannot start. Pekko's
   * asks answer with Scala's CompletionStage, which runs even a non-async callback on the JDK's common
   * pool (a new thread per callback with 2 cores); and their timeout runs on the scheduler of the
   * system the target belongs to, which stops with that system (a cluster membership that was downed).
   */
  static <T> CompletableFuture<T> bounded(Supplier<? extends CompletionStage<T>> ask, long boundMillis,
      Executor executor) {
    try {
      CompletableFuture<T> answer = new CompletableFuture<>();
      ask.get().whenCompleteAsync((v, e) -> {
        if (e != null) {
          answer.completeExceptionally(e);
        } else {
          answer.complete(v);
        }
      }, executor);
      return answer.orTimeout(boundMillis, TimeUnit.MILLISECONDS);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }
}
