package io.fencepost;

import java.util.OptionalLong;

/**
 * The {@code fencepost.replay-of} header a replayed dead letter carries: the dead letter's id,
 * {@code group-topic-partition-offset} of the record that was dead-lettered.
 */
final class ReplayIds {

  /** The header's name. */
  static final String HEADER = "fencepost.replay-of";
  /**
   * The id of the record as first written, on every replay of it (a replay that fails again is
   * dead-lettered under a new id; this one stays): the key of its external calls.
   */
  static final String ORIGIN_HEADER = "fencepost.origin-id";
  /** A dead letter's {@code replayOf} for a replay of another consumer group's dead letter: never replayable. */
  static final long NOT_REPLAYABLE = Long.MAX_VALUE;

  private ReplayIds() {
  }

  /** The id of the dead letter of {@code partition} at {@code offset}. */
  static String id(PartitionId partition, long offset) {
    return partition.positionKey(offset);
  }

  /**
   * The offset of the dead letter {@code id} names when it is one of {@code partition}'s (same
   * group, topic and partition); empty for another partition's id or one that is not an id.
   */
  static OptionalLong offsetIn(PartitionId partition, String id) {
    if (id == null) {
      return OptionalLong.empty();   // no header: nothing to build (this runs for every record)
    }
    String prefix = prefix(partition);
    if (!id.startsWith(prefix)) {
      return OptionalLong.empty();
    }
    try {
      long offset = Long.parseLong(id.substring(prefix.length()));
      return offset >= 0 ? OptionalLong.of(offset) : OptionalLong.empty();
    } catch (NumberFormatException e) {
      return OptionalLong.empty();
    }
  }

  /**
   * True when {@code id} names a dead letter of {@code partition}'s topic and partition number in any
   * consumer group ({@code <group>-<topic>-<partition>-<offset>}).
   */
  static boolean namesTopicPartition(PartitionId partition, String id) {
    if (id == null) {
      return false;
    }
    String suffix = "-" + partition.topic() + "-" + partition.partition() + "-";
    int at = id.lastIndexOf(suffix);
    if (at <= 0 || at + suffix.length() == id.length()) {
      return false;
    }
    return id.substring(at + suffix.length()).chars().allMatch(Character::isDigit);
  }

  /**
   * What a {@code fencepost.replay-of} header ({@code id}, null when absent) makes of a record of
   * {@code partition}: the offset of the dead letter it replays when it is this partition's;
   * {@link #NOT_REPLAYABLE} when it is another consumer group's dead letter of the same topic and
   * partition (that group applied the record); empty when it is no replay here (no header, or one
   * naming another topic or partition, copied along by a mirror).
   */
  static OptionalLong replayOf(PartitionId partition, String id) {
    OptionalLong offset = offsetIn(partition, id);
    return offset.isPresent() || !namesTopicPartition(partition, id) ? offset : OptionalLong.of(NOT_REPLAYABLE);
  }

  private static String prefix(PartitionId partition) {
    return partition.group() + "-" + partition.topic() + "-" + partition.partition() + "-";
  }
}
