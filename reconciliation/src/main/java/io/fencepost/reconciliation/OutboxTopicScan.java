package io.fencepost.reconciliation;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import io.fencepost.OutboxRecord;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * An outbox topic read as a {@code read_committed} consumer reads it, from its start to each
 * partition's last stable offset, and compared with the outbox records the journal holds for it.
 */
final class OutboxTopicScan {

  private static final int SAMPLES = 10;

  private OutboxTopicScan() {
  }

  static ReconciliationReport.Outbox compare(Properties consumer, String topic, boolean exactlyOnce,
      Set<String> journaled) {
    Properties p = new Properties();
    p.putAll(consumer);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Map<String, Integer> seen = new HashMap<>();
    long records = 0;
    long withoutId = 0;
    try (KafkaConsumer<byte[], byte[]> reader = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
        new ByteArrayDeserializer())) {
      List<PartitionInfo> infos = reader.partitionsFor(topic, Duration.ofSeconds(30));
      if (infos == null || infos.isEmpty()) {
        throw new IllegalArgumentException("outbox topic [" + topic + "] does not exist");
      }
      List<TopicPartition> tps = new ArrayList<>();
      infos.forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
      reader.assign(tps);
      reader.seekToBeginning(tps);
      Map<TopicPartition, Long> end = reader.endOffsets(tps, Duration.ofSeconds(30));
      long idleSince = System.nanoTime();
      while (tps.stream().anyMatch(tp -> reader.position(tp, Duration.ofSeconds(30)) < end.get(tp))) {
        List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
        reader.poll(Duration.ofMillis(500)).forEach(batch::add);
        if (batch.isEmpty() && System.nanoTime() - idleSince > Duration.ofMinutes(2).toNanos()) {
          throw new IllegalStateException("reading outbox topic [" + topic + "] made no progress for 2 minutes");
        } else if (!batch.isEmpty()) {
          idleSince = System.nanoTime();
        }
        for (ConsumerRecord<byte[], byte[]> r : batch) {
          records++;
          Header id = r.headers().lastHeader(OutboxRecord.ID_HEADER);
          if (id == null) {
            withoutId++;
          } else {
            seen.merge(new String(id.value(), StandardCharsets.UTF_8), 1, Integer::sum);
          }
        }
      }
    }
    long published = 0;
    long copies = 0;
    long unknown = withoutId;
    for (Map.Entry<String, Integer> e : seen.entrySet()) {
      if (journaled.contains(e.getKey())) {
        published++;
        copies += e.getValue() - 1;
      } else {
        unknown += e.getValue();
      }
    }
    TreeSet<String> missing = new TreeSet<>();
    for (String id : journaled) {
      if (!seen.containsKey(id)) {
        missing.add(id);
      }
    }
    return new ReconciliationReport.Outbox(topic, exactlyOnce, journaled.size(), records, published,
        journaled.size() - published, copies, unknown, missing.stream().limit(SAMPLES).toList());
  }
}
