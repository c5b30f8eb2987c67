package io.fencepost.kafka;

import java.util.List;

/**
 * The pipeline's periodic INFO line (every {@code progress-interval}). First what this node applied,
 * dropped and dead-lettered since it started ({@link NodeTotals}, kept across rebalances), with the
 * increase since the previous line; then the partitions it holds now: what they applied in all (every
 * owner's work, from their journals), how far behind they are, and how many halted.
 */
final class ProgressLine {

  private NodeTotals.Counts last = NodeTotals.Counts.NONE;

  /** The line for this node's totals and its partitions' views; remembers the totals for the next one. */
  synchronized String render(String pipeline, NodeTotals.Counts node, List<PartitionView> views) {
    long partitionsApplied = 0;
    long lag = 0;
    long unknownLag = 0;
    long halted = 0;
    PartitionView behind = null;
    for (PartitionView v : views) {
      partitionsApplied += v.appliedRecords();
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
    StringBuilder b = new StringBuilder("[").append(pipeline).append("] progress: ").append(views.size())
        .append(views.size() == 1 ? " partition" : " partitions").append(" here; this node applied ")
        .append(node.applied()).append(since(node.applied(), last.applied())).append(", dropped ")
        .append(node.dropped()).append(since(node.dropped(), last.dropped())).append(" (")
        .append(node.droppedRedelivery()).append(" redelivered, ").append(node.droppedByKey())
        .append(" by business key), dead-lettered ").append(node.deadLettered())
        .append(since(node.deadLettered(), last.deadLettered())).append("; its partitions: applied ")
        .append(partitionsApplied).append(" in all, lag ").append(lag);
    if (behind != null && behind.lag().getAsLong() > 0) {
      b.append(" (most ").append(behind.lag().getAsLong()).append(" at ").append(behind.partition().topic())
          .append('-').append(behind.partition().partition()).append(')');
    }
    if (unknownLag > 0) {
      b.append(", lag unknown for ").append(unknownLag);
    }
    b.append(", halted ").append(halted);
    last = node;
    return b.toString();
  }

  private static String since(long now, long before) {
    return " (+" + Math.max(0, now - before) + ")";
  }
}
