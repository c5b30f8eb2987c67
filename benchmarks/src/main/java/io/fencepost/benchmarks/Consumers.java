package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Consumer settings shared by all peers, and the plain KafkaConsumer of the hand-written ones. */
final class Consumers {

  /**
   * {@code receive.buffer.bytes} of every peer's consumers: -1, the OS default with autotuning. With
   * Kafka's fixed 64 KiB default, fetch responses larger than the buffer stalled delivery for about
   * 200 ms every few seconds on this loopback at 100,000 records/s (TCP zero-window probing, while
   * the producer's acks stayed under 20 ms), which made every peer's p99 about 200 ms.
   */
  static final String RECEIVE_BUFFER_BYTES = "-1";

  /** How long a run may take before it is given up (and its missing effects count as losses). */
  static final Duration RUN_TIMEOUT = Duration.ofMinutes(5);

  private Consumers() {
  }

  /** A consumer in {@code group}: manual commits, from the earliest offset, at most 2,000 records per poll. */
  static KafkaConsumer<String, String> create(String bootstrap, String group) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2000");
    p.put(ConsumerConfig.RECEIVE_BUFFER_CONFIG, RECEIVE_BUFFER_BYTES);
    return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
  }
}
