package io.fencepost.reconciliation;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.Function;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The input: every record of the topic up to its end when the scan starts, counted per time bucket
 * (by record time) and per business key, and the producers' sequence numbers when a header carries
 * them.
 */
final class TopicScan {

  /** Time buckets at most (a report row each). */
  private static final int MAX_BUCKETS = 1 << 16;

  private final Map<Instant, Integer> bucketIndex = new TreeMap<>();
  private final List<Instant> bucketStarts = new ArrayList<>();
  private final long[] recordsPerBucket = new long[MAX_BUCKETS];
  private final Map<String, BitSet> sequences = new HashMap<>();
  /** Records with a business key (the others are keyed by their position). */
  long keyed;

  /**
   * Reads {@code topic} from its beginning to its end; counts each record's key into {@code keys}
   * (its business key, else its topic-partition-offset), applied as often as journal writes covered
   * it when it has no business key and {@code journaledKeys}.
   */
  void read(Properties consumerProperties, String topic, Duration bucket, Function<ConsumerRecord<byte[], byte[]>,
      Optional<String>> inputKeys, String sequenceHeader, boolean journaledKeys, JournalScan journal, KeyTally keys) {
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties,
        new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
        tps.add(new TopicPartition(topic, info.partition()));
      }
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      Map<TopicPartition, Long> end = consumer.endOffsets(tps);
      Map<TopicPartition, Long> remaining = new HashMap<>(end);
      remaining.entrySet().removeIf(e -> consumer.position(e.getKey()) >= e.getValue());
      long bucketMillis = bucket.toMillis();
      while (!remaining.isEmpty()) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          TopicPartition tp = new TopicPartition(r.topic(), r.partition());
          if (r.offset() >= end.get(tp)) {
            continue;
          }
          int b = bucketOf(Instant.ofEpochMilli(Math.max(0, r.timestamp()) / bucketMillis * bucketMillis));
          recordsPerBucket[b]++;
          Optional<String> businessKey = inputKeys.apply(r);
          int slot = keys.input(businessKey.orElseGet(() -> r.topic() + "-" + r.partition() + "-" + r.offset()), b);
          if (journal.deadLettered(r.partition(), r.offset())) {
            keys.counts.markDead(slot);
          } else if (journaledKeys && businessKey.isEmpty()) {
            for (int i = journal.timesCovered(r.partition(), r.offset()); i > 0; i--) {
              keys.appliedLastInput();
            }
          }
          if (businessKey.isPresent()) {
            keyed++;
          }
          if (sequenceHeader != null) {
            sequence(r, sequenceHeader);
          }
          if (r.offset() + 1 >= end.get(tp)) {
            remaining.remove(tp);
          }
        }
      }
    }
  }

  private int bucketOf(Instant start) {
    Integer b = bucketIndex.get(start);
    if (b == null) {
      b = bucketStarts.size();
      if (b >= MAX_BUCKETS) {
        throw new IllegalStateException("more than " + MAX_BUCKETS + " time buckets; use a wider bucket");
      }
      bucketIndex.put(start, b);
      bucketStarts.add(start);
    }
    return b;
  }

  /** Notes the sequence number in the record's header (a decimal number from 1 per record key); others are ignored. */
  private void sequence(ConsumerRecord<byte[], byte[]> r, String header) {
    Header h = r.headers().lastHeader(header);
    if (h == null) {
      return;
    }
    String entity = r.key() == null ? "" : new String(r.key(), StandardCharsets.UTF_8);
    try {
      int seq = Integer.parseInt(new String(h.value(), StandardCharsets.UTF_8).trim());
      if (seq > 0) {
        sequences.computeIfAbsent(entity, k -> new BitSet()).set(seq);
      }
    } catch (NumberFormatException e) {
      // not a sequence number: ignored
    }
  }

  /** The time buckets in order, each with its index. */
  Map<Instant, Integer> buckets() {
    return bucketIndex;
  }

  long records(int bucket) {
    return recordsPerBucket[bucket];
  }

  long records() {
    long n = 0;
    for (int i = 0; i < bucketStarts.size(); i++) {
      n += recordsPerBucket[i];
    }
    return n;
  }

  /** Sequence numbers missing below each entity's highest: their count, and the first few as entity#number. */
  long gaps(List<String> samples, int maxSamples) {
    long gaps = 0;
    for (Map.Entry<String, BitSet> e : new TreeMap<>(sequences).entrySet()) {
      BitSet seen = e.getValue();
      for (int n = seen.nextClearBit(1); n < seen.length(); n = seen.nextClearBit(n + 1)) {
        gaps++;
        if (samples.size() < maxSamples) {
          samples.add(e.getKey() + "#" + n);
        }
      }
    }
    return gaps;
  }
}
