package io.fencepost.tools;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import io.fencepost.OutboxRecord;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * What a {@code read_committed} consumer of an outbox topic sees: its records, read from the start to
 * each partition's last stable offset, and the distinct outbox ids among them ({@link OutboxRecord#ID_HEADER});
 * records minus ids are copies.
 */
record OutboxTopicCount(long records, long ids, long withoutId) {

  /** The count as a reader with {@code properties} (connection and security settings) sees it now. */
  static OutboxTopicCount read(Map<String, Object> properties, String topic, Duration timeout) {
    Properties p = new Properties();
    p.putAll(properties);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.remove(ConsumerConfig.GROUP_ID_CONFIG);
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
        new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      consumer.partitionsFor(topic, timeout).forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      Map<TopicPartition, Long> end = consumer.endOffsets(tps, timeout);
      long deadline = System.nanoTime() + timeout.toNanos();
      long records = 0;
      long withoutId = 0;
      Set<String> ids = new HashSet<>();
      while (tps.stream().anyMatch(tp -> consumer.position(tp, timeout) < end.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("reading topic [" + topic + "] to its last stable offsets " + end
              + " took longer than " + timeout);
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          records++;
          Header id = r.headers().lastHeader(OutboxRecord.ID_HEADER);
          if (id == null) {
            withoutId++;
          } else {
            ids.add(new String(id.value(), StandardCharsets.UTF_8));
          }
        }
      }
      return new OutboxTopicCount(records, ids.size(), withoutId);
    }
  }

  /** Records that repeat an id already seen. */
  long copies() {
    return records - withoutId - ids;
  }

  @Override
  public String toString() {
    return records + " records, " + ids + " distinct outbox ids, " + copies() + " copies"
        + (withoutId > 0 ? ", " + withoutId + " without an outbox id" : "");
  }
}
