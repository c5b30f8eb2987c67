package io.fencepost.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.fencepost.Inbound;
import io.fencepost.PartitionId;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pipeline's deserializers, treated as a Kafka consumer treats its own: configured with the
 * consumer's properties when the pipeline starts ({@code isKey} true for the key's), closed when it
 * stopped. Without a key deserializer the key is its UTF-8 text.
 */
final class RecordDecoder<V> {

  private static final Logger log = LoggerFactory.getLogger(RecordDecoder.class);

  private final String pipeline;
  private final Deserializer<?> keyDeserializer;
  private final Deserializer<V> valueDeserializer;

  /** {@code keyDeserializer} may be null: keys are then their UTF-8 text. */
  RecordDecoder(String pipeline, Deserializer<?> keyDeserializer, Deserializer<V> valueDeserializer) {
    this.pipeline = pipeline;
    this.keyDeserializer = keyDeserializer;
    this.valueDeserializer = valueDeserializer;
  }

  void configure(Map<String, Object> consumerProperties) {
    configure(valueDeserializer, consumerProperties, false);
    if (keyDeserializer != null) {
      configure(keyDeserializer, consumerProperties, true);
    }
  }

  private void configure(Deserializer<?> d, Map<String, Object> properties, boolean isKey) {
    try {
      d.configure(properties, isKey);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("[" + pipeline + "] the " + (isKey ? "key" : "value") + " deserializer "
          + d.getClass().getName() + " refused its configuration (the consumer's properties, fencepost.pipelines."
          + pipeline + ".kafka-clients included): " + e.getMessage(), e);
    }
  }

  void close() {
    close(valueDeserializer, "value");
    if (keyDeserializer != null) {
      close(keyDeserializer, "key");
    }
  }

  private void close(Deserializer<?> d, String which) {
    try {
      d.close();
    } catch (RuntimeException e) {
      log.warn("[{}] closing the {} deserializer {}: {}", pipeline, which, d.getClass().getName(), e.toString());
    }
  }

  /** The value; a deserializer that returns null for it fails the record (dead-lettered). */
  V value(ConsumerRecord<byte[], byte[]> r) {
    V value = valueDeserializer.deserialize(r.topic(), r.headers(), r.value());
    if (value == null) {
      throw new SerializationException("the value deserializer returned null for a "
          + (r.value() == null ? "null (tombstone)" : r.value().length + "-byte") + " value");
    }
    return value;
  }

  /** Whether keys go through a key deserializer (else a key is its UTF-8 text). */
  boolean decodesKeys() {
    return keyDeserializer != null;
  }

  /** The key as the key deserializer makes it (its text without one); empty for a record without key. */
  Optional<Object> key(ConsumerRecord<byte[], byte[]> r) {
    if (r.key() == null) {
      return Optional.empty();
    }
    if (keyDeserializer == null) {
      return Optional.of(new String(r.key(), StandardCharsets.UTF_8));
    }
    Object key = keyDeserializer.deserialize(r.topic(), r.headers(), r.key());
    if (key == null) {
      throw new SerializationException("the key deserializer returned null for a " + r.key().length + "-byte key");
    }
    return Optional.of(key);
  }

  /**
   * The record as its handler sees it: headers (before a deserializer may change them), key text,
   * typed key and value. A value over {@code maxRecordBytes} is refused undecoded; a refusal of
   * either deserializer fails the record (it is dead-lettered with the exception's class and message).
   */
  Inbound<V> toInbound(PartitionId id, ConsumerRecord<byte[], byte[]> r, int maxRecordBytes) {
    if (r.value() != null && r.value().length > maxRecordBytes) {
      throw new RecordTooLargeException("value of " + r.value().length + " bytes exceeds fencepost.pipelines."
          + pipeline + ".dead-letter.max-record-bytes = " + maxRecordBytes);
    }
    List<Inbound.Header> headers = headers(r);
    Optional<String> key = r.key() == null ? Optional.empty() : Optional.of(new String(r.key(), StandardCharsets.UTF_8));
    // Without a key deserializer the typed key is the key's text: decoded once.
    Optional<Object> typedKey = decodesKeys() ? key(r) : key.map(k -> (Object) k);
    return new Inbound<>(id, r.offset(), key, value(r), headers, Instant.ofEpochMilli(Math.max(0, r.timestamp())),
        typedKey);
  }

  /** Every header in the record's order, repeated names included. */
  static List<Inbound.Header> headers(ConsumerRecord<byte[], byte[]> r) {
    List<Inbound.Header> out = new ArrayList<>();
    for (Header h : r.headers()) {
      out.add(new Inbound.Header(h.key(), h.value()));
    }
    return out;
  }
}
