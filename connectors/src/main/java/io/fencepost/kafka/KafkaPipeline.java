package io.fencepost.kafka;

import java.util.Objects;
import java.util.function.Function;

import io.fencepost.GuaranteeStatement;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Consumes topics with a consumer group and routes every partition to its {@link PartitionActor},
 * a Cluster Sharding entity placed on the node that consumes the partition.
 *
 * <pre>{@code
 * Pipeline ledger = KafkaPipeline.create(system, LedgerActor::new, new PaymentDeserializer(),
 *     PipelineSettings.create(system, "ledger")).start();
 * }</pre>
 *
 * <p>On assignment each partition's shard is moved to this node, its actor is asked for its stored
 * next offset and the consumer seeks there (never to the broker's committed offset). Records are
 * batched per partition and sent to the actor; the next batch waits for the reply, which comes after
 * the journal write. Offsets are then committed to Kafka, for lag monitoring only. A rejected or
 * timed-out batch is resent with backoff; since redeliveries are dropped by the actor, nothing is
 * skipped and nothing doubles. The actor system must use the cluster provider.
 *
 * @param <V> the record value type
 */
public final class KafkaPipeline<V> {

  private final ActorSystem<?> system;
  private final Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory;
  private final Deserializer<V> valueDeserializer;
  private final PipelineSettings settings;

  private KafkaPipeline(ActorSystem<?> system, Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory,
      Deserializer<V> valueDeserializer, PipelineSettings settings) {
    this.system = Objects.requireNonNull(system, "system");
    this.factory = Objects.requireNonNull(factory, "factory");
    this.valueDeserializer = Objects.requireNonNull(valueDeserializer, "valueDeserializer");
    this.settings = Objects.requireNonNull(settings, "settings").requireComplete();
  }

  /**
   * A pipeline (not yet started).
   *
   * @param factory makes a partition's actor, e.g. {@code LedgerActor::new}
   * @param valueDeserializer turns record values into {@code V}; it runs in the pipeline, per record
   */
  public static <V> KafkaPipeline<V> create(ActorSystem<?> system,
      Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory, Deserializer<V> valueDeserializer,
      PipelineSettings settings) {
    return new KafkaPipeline<>(system, factory, valueDeserializer, settings);
  }

  /** What the pipeline will guarantee with its settings. */
  public GuaranteeStatement guarantee() {
    return RunningPipeline.guarantee(system, settings);
  }

  /** Starts sharding and the consumer on this node; returns the running pipeline. */
  public Pipeline start() {
    return RunningPipeline.start(system, factory, valueDeserializer, settings);
  }
}
