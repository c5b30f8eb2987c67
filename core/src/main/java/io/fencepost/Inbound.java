package io.fencepost;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One record as a {@link PartitionActor} sees it: where it sits in its partition, its key, its
 * deserialized value, its headers and its timestamp. No Kafka types: the connectors build these.
 *
 * @param <V> the value type
 * @param partition the partition the record came from
 * @param offset its offset in that partition
 * @param key the record key as UTF-8 text, when there is one
 * @param value the deserialized value
 * @param headers header name to raw bytes (the last value wins for repeated names)
 * @param timestamp the record's timestamp
 */
public record Inbound<V>(PartitionId partition, long offset, Optional<String> key, V value,
    Map<String, byte[]> headers, Instant timestamp) {

  public Inbound {
    Objects.requireNonNull(partition, "partition");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(timestamp, "timestamp");
    if (offset < 0) {
      throw new IllegalArgumentException("offset must be >= 0, was [" + offset + "]");
    }
    headers = Map.copyOf(headers);
  }

  /** A record without key or headers, timestamped now (tests and examples). */
  public static <V> Inbound<V> of(PartitionId partition, long offset, V value) {
    return new Inbound<>(partition, offset, Optional.empty(), value, Map.of(), Instant.now());
  }

  /** A header's value decoded as UTF-8. */
  public Optional<String> header(String name) {
    byte[] v = headers.get(name);
    return v == null ? Optional.empty() : Optional.of(new String(v, StandardCharsets.UTF_8));
  }

  /** {@code group-topic-partition-offset}: the identity of this stored copy of the record. */
  public String positionKey() {
    return partition.group() + "-" + partition.topic() + "-" + partition.partition() + "-" + offset;
  }
}
