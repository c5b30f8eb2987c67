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

  /**
   * The journal database (0 to {@code databases - 1}) that holds this partition's history when the
   * journal is spread over {@code databases} databases: the Java {@code hashCode} of
   * {@link #qualifiedName()} (as the Java Language Specification defines it for strings) modulo
   * {@code databases}. Fixed for a deployment's life: a partition whose history is in database
   * {@code i} must always be sent to database {@code i}.
   */
  public int journalDatabase(int databases) {
    if (databases < 1) {
      throw new IllegalArgumentException("databases must be >= 1, was " + databases);
    }
    return Math.floorMod(qualifiedName().hashCode(), databases);
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
