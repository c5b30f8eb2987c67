package io.fencepost.internal.writepath;

import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.errors.FencepostException;
import io.fencepost.errors.OffsetGapException;
import io.fencepost.errors.RecordsParkedException;
import io.fencepost.internal.DeadLetterEntry;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.PartitionState;
import org.slf4j.Logger;

/**
 * A batch's way in: what of it is new ({@link BatchSelector}), or why it is refused as it is, with
 * the log lines and counters of what it drops. Used on the actor's thread only.
 */
public final class BatchIntake<V> {

  private final PartitionId partition;
  private final BatchSelector<V> selector;
  private final PartitionMetrics metrics;
  private final Logger log;
  private long droppedRedelivery;

  public BatchIntake(PartitionId partition, PartitionActorSettings settings, UserHandlers<V, ?, ?> handlers,
      PartitionMetrics metrics, Logger log) {
    this.partition = partition;
    this.selector = new BatchSelector<>(partition, settings, handlers, log);
    this.metrics = metrics;
    this.log = log;
  }

  /**
   * The batch's new records, dead letters and next offset; throws the {@link FencepostException} the
   * batch is refused with when it would skip offsets, holds a record of another partition or a record
   * behind a parked key, or a user hook threw for one of its records.
   */
  public BatchSelector.Selection<V> admit(PartitionState<?> state, PartitionCommand.ApplyBatch cmd) {
    BatchSelector.Selection<V> sel;
    try {
      sel = selector.select(state, cmd.records(), cmd.deadLetters(), cmd.coveredFrom());
    } catch (OffsetGapException gap) {
      // Debug: on transactional or compacted topics it is routine (the pipeline then vouches for the hole).
      log.debug("[{}] batch refused: {}", partition.shortName(), gap.getMessage());
      throw gap;
    }
    if (!sel.toPark.isEmpty()) {
      throw new RecordsParkedException(partition.qualifiedName(), sel.toPark);
    }
    // Logged after the checks that refuse a batch outright: a refused batch comes again with them.
    for (DeadLetterEntry d : sel.deadLetters) {
      log.warn("[{}] offset [{}] dead-lettered after {} attempt(s): {}: {}", partition.shortName(),
          d.offset(), d.attempts(), d.errorClass(), d.errorMessage());
    }
    if (!sel.droppedReplays.isEmpty()) {
      log.info("[{}] replayed records at offsets {} dropped: the dead letters they replay are not "
          + "replayable on this partition (replayed before, applied by an earlier owner after all, or of another "
          + "partition or consumer group)", partition.shortName(), sel.droppedReplays);
    }
    droppedRedelivery += sel.droppedRedelivery;
    metrics.dropped(sel.droppedRedelivery, sel.droppedByKey);
    return sel;
  }

  /** Redeliveries this incarnation dropped (records below the stored next offset). */
  public long droppedRedelivery() {
    return droppedRedelivery;
  }
}
