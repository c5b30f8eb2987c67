package io.fencepost.kafka.internal;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;

import io.fencepost.PartitionId;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.SharedGauges;
import io.micrometer.core.instrument.Counter;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * The meters a pipeline records itself, in the actor system's {@code FencepostMeters} registry (a
 * partition actor records its own in core). Tags: group, topic, partition. Names and meanings are
 * listed in docs/operations.md, "Meters".
 */
public final class PipelineMetrics {

  private final SharedGauges shared;

  public PipelineMetrics(ActorSystem<?> system) {
    this.shared = SharedGauges.get(system);
  }

  /**
   * A partition halted on the pipeline's side ({@code offset-above-log-end}): the same counter
   * {@code fencepost.partition.halts} a partition actor increments for the halts it detects.
   */
  public void halted(PartitionId id, String cause) {
    PartitionMetrics.halted(shared.registry(), SharedGauges.tags(id), cause);
  }

  /**
   * Counts a batch sent again; {@code reason} is {@code rejected}, {@code no-reply}, {@code handler}
   * (a handler failure retried or dead-lettered) or {@code gap} (offsets missing from the stream).
   */
  public void retried(PartitionId id, String reason) {
    Counter.builder("fencepost.batch.retries").description("batches sent to their partition actor again")
        .tags(SharedGauges.tags(id).and("reason", reason)).register(shared.registry()).increment();
  }

  /**
   * The partition's gauges {@code fencepost.partition.lag} (records between its stored next offset
   * and its log end, as last measured) and {@code fencepost.partition.stalled} (1 while it is halted,
   * or holds records and finished no batch for stall-timeout); registered once per partition.
   */
  public void partition(PartitionId id, DoubleSupplier lag, DoubleSupplier stalled) {
    shared.gauge("fencepost.partition.lag", "records between the stored next offset and the log end", id, lag);
    shared.gauge("fencepost.partition.stalled",
        "1 while the partition is halted, or holds records and finished no batch for stall-timeout", id, stalled);
  }

  /**
   * The outbox relay's position: the gauge {@code fencepost.outbox.relay.lag} is the partition's last
   * journal sequence number less this one (journal entries the relay has yet to pass).
   */
  public AtomicLong relayPosition(PartitionId id) {
    AtomicLong head = shared.cell(PartitionMetrics.JOURNAL_HEAD, id);
    AtomicLong position = shared.cell("fencepost.outbox.relay.position", id);
    shared.gauge("fencepost.outbox.relay.lag", "journal entries written but not yet passed by the outbox relay", id,
        () -> Math.max(0, head.get() - position.get()));
    return position;
  }

  /** The partition left this node: its meters go (another node reports them now). */
  public void removed(PartitionId id) {
    shared.removePartition(id);
  }
}
