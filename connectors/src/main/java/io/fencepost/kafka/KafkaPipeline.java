package io.fencepost.kafka;

import java.util.List;
import java.util.Objects;
import java.util.function.Function;

import io.fencepost.GuaranteeStatement;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Consumes topics with a consumer group and routes every partition to its {@link PartitionActor},
 * which runs on the node Kafka assigned the partition to.
 *
 * <pre>{@code
 * Pipeline ledger = KafkaPipeline.create(system, LedgerActor::new, new PaymentDeserializer(),
 *     PipelineSettings.create(system, "ledger")).start();
 * }</pre>
 *
 * <p>On assignment each partition's actor starts on this node, recovers from the journal and is asked
 * for its stored next offset; the consumer seeks there (never to the broker's committed offset). Records are
 * batched per partition and sent to the actor; the next batch waits for the reply, which comes after
 * the journal write. Offsets are then committed to Kafka, for lag monitoring only. A rejected or
 * timed-out batch is resent with backoff; since redeliveries are dropped by the actor, nothing is
 * skipped and nothing doubles. A write of a stale incarnation of the actor (on a node that lost the
 * partition while paused) is refused by the journal's fence. Any actor provider works: a single
 * node, or nodes of a Pekko Cluster.
 *
 * @param <V> the record value type
 */
public final class KafkaPipeline<V> {

  private final ActorSystem<?> system;
  private final Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory;
  private final Deserializer<V> valueDeserializer;
  private final Deserializer<?> keyDeserializer;
  private final PipelineSettings settings;

  private KafkaPipeline(ActorSystem<?> system, Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory,
      Deserializer<?> keyDeserializer, Deserializer<V> valueDeserializer, PipelineSettings settings) {
    this.system = Objects.requireNonNull(system, "system");
    this.factory = Objects.requireNonNull(factory, "factory");
    this.keyDeserializer = keyDeserializer;
    this.valueDeserializer = Objects.requireNonNull(valueDeserializer, "valueDeserializer");
    this.settings = Objects.requireNonNull(settings, "settings").requireComplete();
  }

  /**
   * A pipeline (not yet started).
   *
   * @param factory makes a partition's actor, e.g. {@code LedgerActor::new}
   * @param valueDeserializer turns record values into {@code V}; it runs in the pipeline, per record.
   *     As a Kafka consumer does with its deserializers, the pipeline calls its {@code configure} with
   *     the consumer's properties ({@code kafka-clients} included, {@code isKey} false) when it starts,
   *     and its {@code close} when it stopped: give each pipeline its own instance
   */
  public static <V> KafkaPipeline<V> create(ActorSystem<?> system,
      Function<PartitionContext, ? extends PartitionActor<V, ?, ?>> factory, Deserializer<V> valueDeserializer,
      PipelineSettings settings) {
    return new KafkaPipeline<>(system, factory, null, valueDeserializer, settings);
  }

  /**
   * This pipeline with a key deserializer: each record's key is then {@code Inbound.keyAs(type)} as it
   * made it (without one, the key's UTF-8 text). Configured ({@code isKey} true) and closed like the
   * value deserializer; a key it cannot read dead-letters the record. {@link io.fencepost.Inbound#key()}
   * stays the key's UTF-8 text, for logs and dead letters.
   */
  public KafkaPipeline<V> withKeyDeserializer(Deserializer<?> keyDeserializer) {
    return new KafkaPipeline<>(system, factory, Objects.requireNonNull(keyDeserializer, "keyDeserializer"),
        valueDeserializer, settings);
  }

  /** What the pipeline will guarantee with its settings. */
  public GuaranteeStatement guarantee() {
    return RunningPipeline.guarantee(system, settings);
  }

  /**
   * The pipelines running on this actor system, in start order, until their stop completed (while
   * stopping, their {@link Pipeline#health()} says so). Health checks read them.
   */
  public static List<Pipeline> running(ActorSystem<?> system) {
    return RunningPipelines.get(system).all();
  }

  /** Starts the consumer on this node; returns the running pipeline. */
  public Pipeline start() {
    return RunningPipeline.start(system, factory, new RecordDecoder<>(settings.name(), keyDeserializer,
        valueDeserializer), settings);
  }
}
