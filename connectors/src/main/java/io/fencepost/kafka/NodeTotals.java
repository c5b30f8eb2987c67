package io.fencepost.kafka;

import java.util.concurrent.atomic.LongAdder;

import io.fencepost.BatchOutcome;

/**
 * What this node's pipeline applied since it started, from the outcome of every batch it sent: kept
 * across rebalances (a partition that moves away takes its stored counts with it, not this node's
 * work). Thread-safe: batches of different partitions complete on different threads.
 */
final class NodeTotals {

  private final LongAdder applied = new LongAdder();
  private final LongAdder droppedRedelivery = new LongAdder();
  private final LongAdder droppedByKey = new LongAdder();
  private final LongAdder deadLettered = new LongAdder();

  /** A batch this node sent was applied. */
  void record(BatchOutcome.Applied outcome) {
    applied.add(outcome.applied());
    droppedRedelivery.add(outcome.droppedRedelivery());
    droppedByKey.add(outcome.droppedByKey());
    deadLettered.add(outcome.deadLettered());
  }

  /** The totals now. */
  Counts counts() {
    return new Counts(applied.sum(), droppedRedelivery.sum(), droppedByKey.sum(), deadLettered.sum());
  }

  /** Totals since the node started. */
  record Counts(long applied, long droppedRedelivery, long droppedByKey, long deadLettered) {

    static final Counts NONE = new Counts(0, 0, 0, 0);

    long dropped() {
      return droppedRedelivery + droppedByKey;
    }
  }
}
