package io.fencepost;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

import io.fencepost.internal.ReplayIds;

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
    return ReplayIds.id(partition, offset);
  }

  /** The header {@code DeadLetterReplay} sets on a replayed record: the position key of its dead letter. */
  public static final String REPLAY_OF_HEADER = ReplayIds.HEADER;

  /** The header naming a replayed record's first copy, kept across replays (see {@link #originKey()}). */
  public static final String ORIGIN_ID_HEADER = ReplayIds.ORIGIN_HEADER;

  /**
   * The offset of the dead letter that a record of {@code partition} with header
   * {@value #REPLAY_OF_HEADER} = {@code headerValue} replays; empty when the value is missing or names
   * another group, topic or partition (a header copied by a mirror does not make a record a replay).
   */
  public static OptionalLong replayedOffset(PartitionId partition, String headerValue) {
    return ReplayIds.replayOf(partition, headerValue);
  }

  /**
   * When this record is a replayed dead letter of its own partition ({@code fencepost.replay-of},
   * set by {@code DeadLetterReplay}): the offset the record was dead-lettered at.
   */
  public OptionalLong replayOf() {
    return header(ReplayIds.HEADER).map(id -> ReplayIds.offsetIn(partition, id)).orElse(OptionalLong.empty());
  }

  /**
   * The identity of the record as first written: for a replayed dead letter, {@link #positionKey()}
   * of the record's first copy (header {@code fencepost.origin-id}, kept however often a replay
   * failed and was replayed again), else its own. Identical on every redelivery and every replay.
   */
  public String originKey() {
    Optional<String> origin = header(ReplayIds.ORIGIN_HEADER)
        .filter(id -> ReplayIds.offsetIn(partition, id).isPresent());
    if (origin.isPresent()) {
      return origin.get();
    }
    OptionalLong original = replayOf();
    return original.isPresent() ? ReplayIds.id(partition, original.getAsLong()) : positionKey();
  }
}
