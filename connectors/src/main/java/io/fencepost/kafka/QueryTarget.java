package io.fencepost.kafka;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Which partition of a pipeline's topic a {@link Pipeline#query} asks: the partition a record key
 * goes to (as Kafka's default partitioner maps a key: murmur2 of its bytes, modulo the topic's
 * partition count), or a partition by number.
 */
public final class QueryTarget {

  private final String topic;
  private final byte[] key;
  private final int partition;

  private QueryTarget(String topic, byte[] key, int partition) {
    this.topic = Objects.requireNonNull(topic, "topic");
    this.key = key;
    this.partition = partition;
  }

  /**
   * The partition a record with this key goes to, the key being sent as its UTF-8 bytes (Kafka's
   * {@code StringSerializer}). A producer with a custom partitioner must name the partition instead.
   */
  public static QueryTarget key(String topic, String key) {
    return key(topic, Objects.requireNonNull(key, "key").getBytes(StandardCharsets.UTF_8));
  }

  /** The partition a record with this serialized key goes to. */
  public static QueryTarget key(String topic, byte[] serializedKey) {
    return new QueryTarget(topic, Objects.requireNonNull(serializedKey, "serializedKey").clone(), -1);
  }

  /** Partition {@code partition} of {@code topic}. */
  public static QueryTarget partition(String topic, int partition) {
    if (partition < 0) {
      throw new IllegalArgumentException("partition must be >= 0, was " + partition);
    }
    return new QueryTarget(topic, null, partition);
  }

  public String topic() {
    return topic;
  }

  /** The serialized key, when the target is a key's partition. */
  public Optional<byte[]> serializedKey() {
    return key == null ? Optional.empty() : Optional.of(key.clone());
  }

  /** The partition's number, when the target names one. */
  public OptionalInt partition() {
    return key == null ? OptionalInt.of(partition) : OptionalInt.empty();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof QueryTarget t && topic.equals(t.topic) && partition == t.partition && Arrays.equals(key, t.key);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * topic.hashCode() + partition) + Arrays.hashCode(key);
  }

  @Override
  public String toString() {
    return key == null ? topic + "-" + partition
        : topic + " key " + new String(key, StandardCharsets.UTF_8);
  }
}
