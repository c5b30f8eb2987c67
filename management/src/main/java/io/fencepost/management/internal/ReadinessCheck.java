package io.fencepost.management.internal;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineHealth;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;

/**
 * Pekko Management readiness check: every pipeline started on this node is ready
 * ({@link PipelineHealth#ready()}). A failed check carries the reason, which {@code /ready} shows.
 */
public final class ReadinessCheck implements Supplier<CompletionStage<Boolean>> {

  private final org.apache.pekko.actor.typed.ActorSystem<?> system;

  public ReadinessCheck(ActorSystem system) {
    this.system = Adapter.toTyped(system);
  }

  @Override
  public CompletionStage<Boolean> get() {
    List<Pipeline> pipelines = KafkaPipeline.running(system);
    if (pipelines.isEmpty()) {
      return CompletableFuture.failedFuture(new IllegalStateException("no pipeline runs on this node"));
    }
    return HealthReasons.check(pipelines.stream().map(HealthReasons::of).filter(h -> !h.ready()).toList());
  }
}
