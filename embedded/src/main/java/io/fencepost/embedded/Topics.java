package io.fencepost.embedded;

import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Small read-only questions about a topic, for tests and tools. */
public final class Topics {

  private Topics() {
  }

  /** The sum of the end offsets of every partition of {@code topic}: its record count when nothing was deleted. */
  public static long recordCount(String bootstrap, String topic) {
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of("bootstrap.servers", bootstrap),
        new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = consumer.partitionsFor(topic).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      return consumer.endOffsets(tps).values().stream().mapToLong(Long::longValue).sum();
    }
  }
}
