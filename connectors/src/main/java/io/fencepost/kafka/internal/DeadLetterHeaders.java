package io.fencepost.kafka.internal;

import java.nio.charset.StandardCharsets;
import java.util.Set;

import io.fencepost.PartitionId;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/** The headers a dead-letter record carries, next to the original record's own headers. */
public final class DeadLetterHeaders {

  public static final String TOPIC = "fencepost.original.topic";
  public static final String PARTITION = "fencepost.original.partition";
  public static final String OFFSET = "fencepost.original.offset";
  public static final String TIMESTAMP = "fencepost.original.timestamp";
  public static final String ERROR_CLASS = "fencepost.error.class";
  public static final String ERROR_MESSAGE = "fencepost.error.message";
  public static final String ATTEMPTS = "fencepost.attempts";
  /** {@code group-topic-partition-offset}: the same on every re-publication of the same dead letter. */
  public static final String ID = "fencepost.dead-letter-id";
  /** {@code true} when the record was parked behind an earlier failed record of its key. */
  public static final String PARKED = "fencepost.parked";
  /**
   * Set, to the original value's size in bytes, on a dead letter published without its value: the
   * value was larger than the dead-letter topic or producer accepts. The record stays at its
   * original topic, partition and offset while that topic retains it.
   */
  public static final String VALUE_OMITTED = "fencepost.value-omitted-bytes";
  /**
   * Set, to the original key's size in bytes, on a dead letter whose key or headers alone were larger
   * than the dead-letter topic or producer accepts: it carries no key, no value and none of the
   * record's own headers (their total size in {@link #HEADERS_OMITTED}), only this class's.
   */
  public static final String KEY_OMITTED = "fencepost.key-omitted-bytes";
  /** The total size in bytes (keys and values) of the record's own headers a dead letter left out. */
  public static final String HEADERS_OMITTED = "fencepost.headers-omitted-bytes";

  /** Every header this class adds: a replay drops them and keeps the record's own (business keys too). */
  public static final Set<String> ALL = Set.of(TOPIC, PARTITION, OFFSET, TIMESTAMP, ERROR_CLASS,
      ERROR_MESSAGE, ATTEMPTS, ID, PARKED, VALUE_OMITTED, KEY_OMITTED, HEADERS_OMITTED);

  private DeadLetterHeaders() {
  }

  public static void add(Headers headers, PartitionId id, String topic, int partition, long offset, long timestamp,
      String errorClass, String errorMessage, int attempts, boolean parked) {
    put(headers, TOPIC, topic);
    put(headers, PARTITION, Integer.toString(partition));
    put(headers, OFFSET, Long.toString(offset));
    put(headers, TIMESTAMP, Long.toString(timestamp));
    put(headers, ERROR_CLASS, errorClass);
    String message = errorMessage == null ? "" : errorMessage;
    put(headers, ERROR_MESSAGE, message.length() > 2000 ? message.substring(0, 2000) + "..." : message);
    put(headers, ATTEMPTS, Integer.toString(attempts));
    put(headers, ID, new PartitionId(id.group(), topic, partition).positionKey(offset));
    put(headers, PARKED, Boolean.toString(parked));
  }

  /**
   * Says what a dead letter left out: its value's size, and (when not negative) its key's and its
   * headers' sizes.
   */
  public static void omitted(Headers headers, int valueBytes, int keyBytes, int headerBytes) {
    put(headers, VALUE_OMITTED, Integer.toString(valueBytes));
    if (keyBytes >= 0) {
      put(headers, KEY_OMITTED, Integer.toString(keyBytes));
    }
    if (headerBytes >= 0) {
      put(headers, HEADERS_OMITTED, Integer.toString(headerBytes));
    }
  }

  /** The total size in bytes of {@code headers}' keys and values. */
  public static int size(Headers headers) {
    int bytes = 0;
    for (Header h : headers) {
      bytes += h.key().getBytes(StandardCharsets.UTF_8).length + (h.value() == null ? 0 : h.value().length);
    }
    return bytes;
  }

  private static void put(Headers headers, String name, String value) {
    headers.remove(name);
    headers.add(name, value.getBytes(StandardCharsets.UTF_8));
  }
}
