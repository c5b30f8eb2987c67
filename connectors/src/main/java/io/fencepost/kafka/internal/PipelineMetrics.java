package io.fencepost.kafka.internal;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;

import io.fencepost.PartitionId;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.SharedGauges;
import io.micrometer.core.instrument.Counter;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The meters a pipeline records itself, in the actor system's {@code FencepostMeters} registry (a
 * partition actor records its own in core). Tags: group, topic, partition. Names and meanings are
 * listed in docs/operations.md, "Meters".
 */
public final class PipelineMetrics {

  private static final Logger log = LoggerFactory.getLogger(PipelineMetrics.class);
  private static final List<String> RETRY_REASONS = List.of("rejected", "no-reply", "handler", "gap");

  private final SharedGauges shared;

  public PipelineMetrics(ActorSystem<?> system) {
    this.shared = SharedGauges.get(system);
  }

  /**
   * A partition halted on the pipeline's side ({@code offset-above-log-end}): the same counter
   * {@code fencepost.partition.halts} a partition actor increments for the halts it detects.
   */
  public void halted(PartitionId id, String cause) {
    safely("fencepost.partition.halts", () -> PartitionMetrics.halted(shared.registry(), SharedGauges.tags(id), cause));
  }

  /**
   * Counts a partition started afresh from its actor's stored offset on this node: {@code cause} is
   * {@code stall} (records waiting, no progress), {@code hung-delivery} (a batch in flight silent too
   * long), {@code no-reply} (its actor answered none of several sends), {@code gap} (its stream
   * lacked offsets) or {@code stream-failed} (its stream failed, logged at ERROR).
   */
  public void restarted(PartitionId id, String cause) {
    safely("fencepost.partition.restarts", () -> Counter.builder("fencepost.partition.restarts")
        .description("partitions started afresh from their actor's stored offset")
        .tags(SharedGauges.tags(id).and("cause", cause)).register(shared.registry()).increment());
  }

  /**
   * Counts a batch sent again; {@code reason} is {@code rejected}, {@code no-reply}, {@code handler}
   * (a handler failure retried or dead-lettered) or {@code gap} (offsets missing from the stream).
   */
  public void retried(PartitionId id, String reason) {
    safely("fencepost.batch.retries", () -> retries(id, reason).increment());
  }

  private Counter retries(PartitionId id, String reason) {
    return Counter.builder("fencepost.batch.retries").description("batches sent to their partition actor again")
        .tags(SharedGauges.tags(id).and("reason", reason)).register(shared.registry());
  }

  /**
   * A partition assigned here: its gauges {@code fencepost.partition.lag} (records between its
   * stored next offset and its log end, as last measured) and {@code fencepost.partition.stalled}
   * (1 while it is halted, stuck recovering, or holds records and finished no batch for
   * stall-timeout); {@code fencepost.outbox.relay.lag} when the outbox is on; its retry counters at 0
   * (so that a first retry shows as an increase).
   */
  public void partition(PartitionId id, DoubleSupplier lag, DoubleSupplier stalled, boolean outbox) {
    safely("fencepost.partition.*", () -> {
      shared.gauge("fencepost.partition.lag", "records between the stored next offset and the log end", id, lag);
      shared.gauge("fencepost.partition.stalled",
          "1 while the partition is halted, stuck recovering, or holds records and finished no batch for stall-timeout",
          id, stalled);
      RETRY_REASONS.forEach(reason -> retries(id, reason));
      if (outbox) {
        AtomicLong head = shared.cell(PartitionMetrics.JOURNAL_HEAD, id);
        AtomicLong position = relayPosition(id);
        shared.gauge("fencepost.outbox.relay.lag", "journal entries written but not yet passed by the outbox relay",
            id, () -> Math.max(0, head.get() - position.get()));
        shared.gauge("fencepost.outbox.relay.failing", "1 while the outbox relay has failed to publish for error-after",
            id, relayFailing(id)::get);
      }
    });
  }

  /** The outbox relay's position (journal sequence number), which {@code fencepost.outbox.relay.lag} reads. */
  public AtomicLong relayPosition(PartitionId id) {
    return shared.cell("fencepost.outbox.relay.position", id);
  }

  /** 1 while the outbox relay has failed for {@code error-after}: the gauge {@code fencepost.outbox.relay.failing}. */
  public AtomicLong relayFailing(PartitionId id) {
    return shared.cell("fencepost.outbox.relay.failing", id);
  }

  /** Counts a committed transaction of an exactly-once outbox relay. */
  public void relayTransaction(PartitionId id) {
    safely("fencepost.outbox.relay.transactions", () -> Counter.builder("fencepost.outbox.relay.transactions")
        .description("transactions the exactly-once outbox relay committed (records and position)")
        .tags(SharedGauges.tags(id)).register(shared.registry()).increment());
  }

  /** Counts a failed outbox relay round; {@code cause} is the Kafka error's class name. */
  public void relayFailed(PartitionId id, Throwable cause) {
    safely("fencepost.outbox.relay.failures", () -> Counter.builder("fencepost.outbox.relay.failures")
        .description("outbox relay rounds that failed (they are retried)")
        .tags(SharedGauges.tags(id).and("cause", cause.getClass().getSimpleName())).register(shared.registry())
        .increment());
  }

  /** Counts a dead-letter publication that failed (retried) or was too large (published without its value). */
  public void deadLetterFailed(PartitionId id, Throwable cause) {
    safely("fencepost.dead-letter.failures", () -> Counter.builder("fencepost.dead-letter.failures")
        .description("dead-letter publications that failed (retried) or were too large (published without the value)")
        .tags(SharedGauges.tags(id).and("cause", cause.getClass().getSimpleName())).register(shared.registry())
        .increment());
  }

  /** The partition left this node: its gauges go (another node reports them now); counters stay. */
  public void removed(PartitionId id) {
    safely("fencepost.partition.*", () -> shared.removePartition(id));
  }

  /** Meters never stop the pipeline: a registry that refuses one (a conflicting meter, a filter) is logged. */
  private static void safely(String meter, Runnable action) {
    try {
      action.run();
    } catch (RuntimeException e) {
      log.warn("meter {} not recorded: {}", meter, e.toString());
    }
  }
}
