package io.fencepost;

import java.util.Objects;

/**
 * The identity of one partition of one consumer group: {@code (group, topic, partition)}. One
 * {@link PartitionActor} owns each, under the entity id {@code group|topic|partition}.
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

  /** {@code group|topic|partition}: the actor's entity id (its persistence id is derived from it). */
  public String entityId() {
    return group + "|" + topic + "|" + partition;
  }

  /** {@code fencepost|group|topic|partition}: the journal's persistence id. */
  public String persistenceId() {
    return "fencepost|" + entityId();
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

  /** Parses {@link #entityId()}. */
  public static PartitionId fromEntityId(String entityId) {
    String[] parts = entityId.split("\\|");
    if (parts.length != 3) {
      throw new IllegalArgumentException("entity id must be group|topic|partition, was [" + entityId + "]");
    }
    try {
      return new PartitionId(parts[0], parts[1], Integer.parseInt(parts[2]));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("entity id's partition must be a number, was [" + entityId + "]", e);
    }
  }

  @Override
  public String toString() {
    return entityId();
  }
}
