package io.fencepost.kafka;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Creates a pipeline's Kafka clients from their properties ({@link ClientProperties}): Kafka's own
 * by default; the ownership state machine's unit tests hand it a {@code MockConsumer} instead.
 */
@FunctionalInterface
interface KafkaClients {

  /** Kafka's own clients. */
  KafkaClients REAL = properties -> new KafkaConsumer<>(properties, new ByteArrayDeserializer(),
      new ByteArrayDeserializer());

  /** A new consumer of raw records (the pipeline's, or its log probe). */
  Consumer<byte[], byte[]> consumer(Map<String, Object> properties);

  /** A new producer of raw records (dead letters, outbox relays). */
  default Producer<byte[], byte[]> producer(Properties properties) {
    return new KafkaProducer<>(properties, new ByteArraySerializer(), new ByteArraySerializer());
  }

  /** A new admin client (topic checks, log ends, log starts). */
  default Admin admin(Map<String, Object> properties) {
    return Admin.create(new HashMap<>(properties));
  }
}
