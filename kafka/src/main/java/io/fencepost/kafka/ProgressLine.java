package io.fencepost.kafka;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The pipeline's periodic INFO line (every {@code progress-interval}): what this node's partitions
 * applied, dropped and dead-lettered, and how far behind they are. Counts since the previous line
 * are shown while the node kept the same partitions and every actor answered (a rebalance or an
 * unanswered actor makes them incomparable). Redeliveries are counted per actor incarnation, so
 * their count since the last line is never shown below zero.
 */
final class ProgressLine {

  private Set<String> lastPartitions = Set.of();
  private long lastApplied;
  private long lastDropped;
  private long lastDeadLettered;
  private boolean lastAllAnswered;

  /** The line for these views; remembers their totals for the next one. */
  synchronized String render(String pipeline, List<PartitionView> views) {
    long applied = 0;
    long droppedRedelivery = 0;
    long droppedByKey = 0;
    long deadLettered = 0;
    long lag = 0;
    long unknownLag = 0;
    long halted = 0;
    boolean allAnswered = true;
    PartitionView behind = null;
    for (PartitionView v : views) {
      allAnswered &= v.answered();
      applied += v.appliedRecords();
      droppedRedelivery += v.droppedRedelivery();
      droppedByKey += v.droppedByKey();
      deadLettered += v.deadLettered();
      if (v.lag().isPresent()) {
        lag += v.lag().getAsLong();
        if (behind == null || v.lag().getAsLong() > behind.lag().getAsLong()) {
          behind = v;
        }
      } else {
        unknownLag++;
      }
      if (!v.halted().isEmpty()) {
        halted++;
      }
    }
    Set<String> partitions = views.stream().map(v -> v.partition().topic() + "-" + v.partition().partition())
        .collect(Collectors.toSet());
    boolean comparable = partitions.equals(lastPartitions) && allAnswered && lastAllAnswered;
    long dropped = droppedRedelivery + droppedByKey;
    StringBuilder b = new StringBuilder("[").append(pipeline).append("] progress: ").append(views.size())
        .append(views.size() == 1 ? " partition" : " partitions").append(" here; applied ").append(applied)
        .append(since(comparable, applied, lastApplied)).append(", dropped ").append(dropped)
        .append(since(comparable, dropped, lastDropped)).append(" (").append(droppedRedelivery)
        .append(" redelivered, ").append(droppedByKey).append(" by business key), dead-lettered ")
        .append(deadLettered).append(since(comparable, deadLettered, lastDeadLettered)).append(", lag ").append(lag);
    if (behind != null && behind.lag().getAsLong() > 0) {
      b.append(" (most ").append(behind.lag().getAsLong()).append(" at ").append(behind.partition().topic())
          .append('-').append(behind.partition().partition()).append(')');
    }
    if (unknownLag > 0) {
      b.append(", lag unknown for ").append(unknownLag);
    }
    b.append(", halted ").append(halted);
    lastPartitions = partitions;
    lastAllAnswered = allAnswered;
    lastApplied = applied;
    lastDropped = dropped;
    lastDeadLettered = deadLettered;
    return b.toString();
  }

  private static String since(boolean comparable, long now, long before) {
    return comparable ? " (+" + Math.max(0, now - before) + ")" : "";
  }
}
