package io.fencepost;

import java.util.Objects;

/**
 * The identity of one partition of one consumer group: {@code (group, topic, partition)}. One
 * {@link PartitionActor} owns each; its journal entries are under {@link #persistenceId()}.
 */
public record PartitionId(String group, String topic, int partition) {

  public PartitionId {
    requireName("group", group);
    requireName("topic", topic);
    if (partition < 0) {
      throw new IllegalArgumentException("partition must be >= 0, was [" + partition + "]");
    }
  }

  private static void requireName(String what, String value) {
    Objects.requireNonNull(value, what);
    if (value.isEmpty() || value.indexOf('|') >= 0) {
      throw new IllegalArgumentException(what + " must be non-empty and must not contain '|', was [" + value + "]");
    }
  }

  /** {@code group|topic|partition}: the partition's name in errors and metrics, and in its persistence id. */
  public String qualifiedName() {
    return group + "|" + topic + "|" + partition;
  }

  /** {@code fencepost|group|topic|partition}: the journal's persistence id. */
  public String persistenceId() {
    return "fencepost|" + qualifiedName();
  }

  /** {@code topic-partition}, the short form used in log lines. */
  public String shortName() {
    return topic + "-" + partition;
  }

  /**
   * {@code group-topic-partition-offset}: the identity of the record at {@code offset} of this
   * partition as this group read it ({@link Inbound#positionKey()}); a dead letter's replay names its
   * record by it.
   */
  public String positionKey(long offset) {
    return group + "-" + topic + "-" + partition + "-" + offset;
  }

  @Override
  public String toString() {
    return qualifiedName();
  }
}
