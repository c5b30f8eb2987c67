package io.fencepost.management.internal;

import java.util.concurrent.CompletionStage;

import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PipelineHealth;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import scala.Function0;
import scala.concurrent.Future;

/**
 * Pekko Management liveness check: no pipeline of this node has a dead or stuck consumer thread
 * ({@link PipelineHealth#live()}). A node without pipelines is live. A failed check carries the reason.
 */
public final class LivenessCheck implements Function0<Future<Object>> {

  private final org.apache.pekko.actor.typed.ActorSystem<?> system;

  public LivenessCheck(ActorSystem system) {
    this.system = Adapter.toTyped(system);
  }

  /**
   * Pekko Management's Scala form of a check, so that a failure reads {@code Check [<this class>]
   * failed: <reason>} rather than naming a generated lambda.
   */
  @Override
  public Future<Object> apply() {
    return HealthReasons.toScala(get());
  }

  CompletionStage<Boolean> get() {
    return HealthReasons.check(KafkaPipeline.running(system).stream().map(HealthReasons::of)
        .filter(h -> !h.live()).toList());
  }
}
