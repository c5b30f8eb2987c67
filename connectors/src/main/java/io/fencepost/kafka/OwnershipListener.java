package io.fencepost.kafka;

import java.util.Collection;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The group's decisions, on the consumer thread inside {@code poll()}: handed to {@link Assignments}
 * in the order Kafka makes them; remembers only whether the consumer is in its group and when this
 * node's assignment last changed (for health).
 */
final class OwnershipListener implements ConsumerRebalanceListener {

  private static final Logger log = LoggerFactory.getLogger(OwnershipListener.class);

  private final String pipeline;
  private final Assignments assignments;
  /** Set at an assignment (an empty one too): the consumer is in its group. Reset when it leaves it. */
  private volatile boolean joined;
  /** When this node's assignment last changed (assigned, revoked, lost, or the consumer left). */
  private volatile long changedNanos;
  private final Ticker ticker;

  OwnershipListener(String pipeline, Assignments assignments, Ticker ticker) {
    this.pipeline = pipeline;
    this.assignments = assignments;
    this.ticker = ticker;
    this.changedNanos = ticker.nanoTime();
  }

  /** Whether the consumer is in its group: it received an assignment (possibly empty) and has not left since. */
  boolean joined() {
    return joined;
  }

  /** When this node's assignment last changed ({@link Ticker#nanoTime()}). */
  long changedNanos() {
    return changedNanos;
  }

  /** The consumer left its group (closed or replaced). */
  void left() {
    joined = false;
    changedNanos = ticker.nanoTime();
  }

  @Override
  public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
    joined = true;
    changedNanos = ticker.nanoTime();
    if (!partitions.isEmpty()) {
      assignments.assign(partitions);
    }
  }

  @Override
  public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
    changedNanos = ticker.nanoTime();
    if (!partitions.isEmpty()) {
      log.info("[{}] revoked {}", pipeline, partitions);
      assignments.release(partitions, false);
    }
  }

  @Override
  public void onPartitionsLost(Collection<TopicPartition> partitions) {
    left();   // the next assignment says it is back
    if (!partitions.isEmpty()) {
      log.warn("[{}] lost {} (this consumer left the group, e.g. after a long pause); their actors' fence refuses "
          + "any write of this node that another owner overtook", pipeline, partitions);
      assignments.release(partitions, true);
    }
  }
}
