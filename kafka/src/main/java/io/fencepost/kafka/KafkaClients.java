package io.fencepost.kafka;

import java.util.Map;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Creates a pipeline's Kafka consumer from its properties: Kafka's own by default, a
 * {@code MockConsumer} in the ownership state machine's unit tests.
 */
@FunctionalInterface
interface KafkaClients {

  /** Kafka's own clients. */
  KafkaClients REAL = properties -> new KafkaConsumer<>(properties, new ByteArrayDeserializer(),
      new ByteArrayDeserializer());

  /** A new consumer of raw records with {@code properties}. */
  Consumer<byte[], byte[]> consumer(Map<String, Object> properties);
}
