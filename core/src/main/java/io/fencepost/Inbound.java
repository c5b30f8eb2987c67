package io.fencepost;

import io.fencepost.annotation.InternalApi;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;


/**
 * One record as a {@link PartitionActor} sees it: where it sits in its partition, its key, its
 * deserialized value, its headers and its timestamp. No Kafka types: the pipeline builds these.
 *
 * @param <V> the value type
 * @param partition the partition the record came from
 * @param offset its offset in that partition
 * @param key the record key as UTF-8 text, when there is one (what dead letters and logs show)
 * @param value the deserialized value
 * @param headers every header in the record's order, repeated names included
 * @param timestamp the record's timestamp
 * @param deserializedKey the key as the pipeline's key deserializer made it (see {@link #keyAs}); the
 *     UTF-8 text of {@code key} when the pipeline has none
 */
public record Inbound<V>(PartitionId partition, long offset, Optional<String> key, V value,
    List<Header> headers, Instant timestamp, Optional<Object> deserializedKey) {

  /**
   * One record header.
   *
   * @param name the header's name
   * @param value its raw value (empty for a header without value)
   */
  public record Header(String name, byte[] value) {
    public Header {
      Objects.requireNonNull(name, "name");
      value = value == null ? new byte[0] : value;
    }

    /** The value decoded as UTF-8. */
    public String text() {
      return new String(value, StandardCharsets.UTF_8);
    }
  }

  public Inbound {
    Objects.requireNonNull(partition, "partition");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(timestamp, "timestamp");
    Objects.requireNonNull(deserializedKey, "deserializedKey");
    if (offset < 0) {
      throw new IllegalArgumentException("offset must be >= 0, was [" + offset + "]");
    }
    headers = List.copyOf(headers);
  }

  /** A record whose key is its UTF-8 text (no key deserializer). */
  public Inbound(PartitionId partition, long offset, Optional<String> key, V value, List<Header> headers,
      Instant timestamp) {
    this(partition, offset, key, value, headers, timestamp, key.map(k -> (Object) k));
  }

  /** A record with one header per name (tests and tools), whose key is its UTF-8 text. */
  public Inbound(PartitionId partition, long offset, Optional<String> key, V value, Map<String, byte[]> headers,
      Instant timestamp) {
    this(partition, offset, key, value, headers.entrySet().stream()
        .map(h -> new Header(h.getKey(), h.getValue())).toList(), timestamp);
  }

  /** A record without key or headers, timestamped now (tests and examples). */
  public static <V> Inbound<V> of(PartitionId partition, long offset, V value) {
    return new Inbound<>(partition, offset, Optional.empty(), value, List.of(), Instant.now());
  }

  /** The last value of header {@code name} decoded as UTF-8 (as Kafka's {@code lastHeader}). */
  public Optional<String> header(String name) {
    for (int i = headers.size() - 1; i >= 0; i--) {
      if (headers.get(i).name().equals(name)) {
        return Optional.of(headers.get(i).text());
      }
    }
    return Optional.empty();
  }

  /** Every value of header {@code name}, in the record's order. */
  public List<byte[]> headerValues(String name) {
    return headers.stream().filter(h -> h.name().equals(name)).map(Header::value).toList();
  }

  /**
   * The key as the pipeline's key deserializer made it (by default the key's UTF-8 text, so
   * {@code keyAs(String.class)} works without one); empty for a record without key.
   *
   * @throws ClassCastException naming both types when the key is not a {@code type}
   */
  public <K> Optional<K> keyAs(Class<K> type) {
    if (deserializedKey.isPresent() && !type.isInstance(deserializedKey.get())) {
      throw new ClassCastException("the key of " + partition.shortName() + " offset " + offset + " is a "
          + deserializedKey.get().getClass().getName() + ", not a " + type.getName()
          + " (the pipeline's key deserializer decides)");
    }
    return deserializedKey.map(type::cast);
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
   * INTERNAL API. The offset of the dead letter that a record of {@code partition} with header
   * {@value #REPLAY_OF_HEADER} = {@code headerValue} replays; empty when the value is missing or names
   * another group, topic or partition (a header copied by a mirror does not make a record a replay).
   */
  @InternalApi
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
