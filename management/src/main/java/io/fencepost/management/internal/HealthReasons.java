package io.fencepost.management.internal;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.stream.Collectors;

import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineHealth;

/** A check's answer: true, or failed with the failing pipelines' reasons (Pekko Management shows a failure's message). */
final class HealthReasons {

  private HealthReasons() {
  }

  /** The pipeline's health; a pipeline whose health cannot be computed is live but not ready. */
  static PipelineHealth of(Pipeline pipeline) {
    try {
      return pipeline.health();
    } catch (RuntimeException e) {
      return new PipelineHealth(pipeline.name(), true, false, "[" + pipeline.name() + "] its health could not be "
          + "computed: " + e);
    }
  }

  /** A check's answer as the Scala future Pekko Management's Scala check type returns. */
  @SuppressWarnings("unchecked")
  static scala.concurrent.Future<Object> toScala(CompletionStage<Boolean> answer) {
    return (scala.concurrent.Future<Object>) (scala.concurrent.Future<?>) scala.jdk.javaapi.FutureConverters.asScala(answer);
  }

  static CompletionStage<Boolean> check(List<PipelineHealth> failing) {
    return check(failing, List.of());
  }

  /** {@link #check(List)}, failing also with the reasons of other components not ready. */
  static CompletionStage<Boolean> check(List<PipelineHealth> failing, List<String> othersNotReady) {
    if (failing.isEmpty() && othersNotReady.isEmpty()) {
      return CompletableFuture.completedFuture(true);
    }
    return CompletableFuture.failedFuture(new IllegalStateException(java.util.stream.Stream.concat(
        failing.stream().map(PipelineHealth::reason), othersNotReady.stream()).collect(Collectors.joining("; "))));
  }
}
