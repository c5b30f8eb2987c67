package io.fencepost;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * A record a handler wants published to Kafka, written to the journal in the same write as the
 * batch's events and offset (the outbox), and published afterwards, at least once, by the
 * pipeline's outbox relay.
 *
 * <p>Every published copy carries the header {@value #ID_HEADER}: {@code <persistence id>/<sequence
 * number>/<index>} of the journal entry that holds it. It is identical on every re-publish, and a
 * downstream {@link PartitionActor} uses it as the business key when the record has no other, so
 * re-published copies are dropped there.
 *
 * @param topic the topic to publish to
 * @param key the record key (UTF-8); without one the relay picks the partition from the id, so
 *     every copy of one record lands in the same partition
 * @param value the record value, already serialized
 */
public record OutboxRecord(String topic, Optional<String> key, byte[] value) {

  /** The header holding the stable id of every published outbox record. */
  public static final String ID_HEADER = "fencepost.outbox-id";

  public OutboxRecord {
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    if (topic.isBlank()) {
      throw new IllegalArgumentException("an outbox record needs a topic, was blank");
    }
  }

  /** The value decoded as UTF-8. */
  public String valueAsString() {
    return new String(value, StandardCharsets.UTF_8);
  }

  /**
   * The persistence id under which the outbox relay of a partition stores the journal sequence number
   * it has published up to (durable state), e.g. for {@code JournalCompaction}, which never compacts
   * past it.
   */
  public static String relayPersistenceId(String partitionPersistenceId) {
    return "fencepost-outbox|" + partitionPersistenceId;
  }

  /** The stable id of the {@code index}-th outbox record of journal entry {@code sequenceNr}. */
  public static String id(String persistenceId, long sequenceNr, int index) {
    return persistenceId + "/" + sequenceNr + "/" + index;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OutboxRecord r && topic.equals(r.topic) && key.equals(r.key) && Arrays.equals(value, r.value);
  }

  @Override
  public int hashCode() {
    return Objects.hash(topic, key, Arrays.hashCode(value));
  }

  @Override
  public String toString() {
    return "OutboxRecord(" + topic + ", " + key.orElse("<no key>") + ", " + value.length + " bytes)";
  }
}
