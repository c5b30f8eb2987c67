package io.fencepost.management.internal;

import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PipelineHealth;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;

/**
 * Pekko Management liveness check: no pipeline of this node has a dead or stuck consumer thread
 * ({@link PipelineHealth#live()}). A node without pipelines is live. A failed check carries the reason.
 */
public final class LivenessCheck implements Supplier<CompletionStage<Boolean>> {

  private final org.apache.pekko.actor.typed.ActorSystem<?> system;

  public LivenessCheck(ActorSystem system) {
    this.system = Adapter.toTyped(system);
  }

  @Override
  public CompletionStage<Boolean> get() {
    return HealthReasons.check(KafkaPipeline.running(system).stream().map(HealthReasons::of)
        .filter(h -> !h.live()).toList());
  }
}
