package io.fencepost;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * A consumer interceptor that hides records from the pipeline's consumer, once each: what a stream
 * sees when the consumer hands part of a partition to another stream. Armed per topic-partition
 * and offset range by a test; the offsets it dropped pass the next time they are fetched.
 */
public final class DroppingInterceptor implements ConsumerInterceptor<byte[], byte[]> {

  private record Range(long from, long to) {
  }

  private static final Map<TopicPartition, Range> ARMED = new ConcurrentHashMap<>();
  private static final Set<String> DROPPED = ConcurrentHashMap.newKeySet();
  static final AtomicInteger DROPS = new AtomicInteger();

  /** Hides each record of {@code tp} at offsets {@code [from, to)} from the next fetch that returns it. */
  static void arm(TopicPartition tp, long from, long to) {
    ARMED.put(tp, new Range(from, to));
  }

  @Override
  public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
    if (ARMED.isEmpty()) {
      return records;
    }
    Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> kept = new HashMap<>();
    boolean droppedAny = false;
    for (TopicPartition tp : records.partitions()) {
      Range range = ARMED.get(tp);
      List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
      for (ConsumerRecord<byte[], byte[]> r : records.records(tp)) {
        if (range != null && r.offset() >= range.from() && r.offset() < range.to()
            && DROPPED.add(tp + "@" + r.offset())) {
          DROPS.incrementAndGet();
          droppedAny = true;
          continue;
        }
        out.add(r);
      }
      kept.put(tp, out);
    }
    return droppedAny ? new ConsumerRecords<>(kept) : records;
  }

  @Override
  public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
  }

  @Override
  public void close() {
  }

  @Override
  public void configure(Map<String, ?> configs) {
  }
}
