package io.fencepost.management.internal;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import io.fencepost.Readiness;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineHealth;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import scala.Function0;
import scala.concurrent.Future;

/**
 * Pekko Management readiness check: every pipeline started on this node is ready
 * ({@link PipelineHealth#ready()}), and no other component registered in {@link Readiness} (a JDBC
 * projection that keeps failing) says it is not. A failed check carries the reasons, which
 * {@code /ready} shows.
 */
public final class ReadinessCheck implements Function0<Future<Object>> {

  private final org.apache.pekko.actor.typed.ActorSystem<?> system;

  public ReadinessCheck(ActorSystem system) {
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
    List<Pipeline> pipelines = KafkaPipeline.running(system);
    if (pipelines.isEmpty()) {
      return CompletableFuture.failedFuture(new IllegalStateException("no pipeline runs on this node"));
    }
    return HealthReasons.check(pipelines.stream().map(HealthReasons::of).filter(h -> !h.ready()).toList(),
        Readiness.get(system).notReady());
  }
}
