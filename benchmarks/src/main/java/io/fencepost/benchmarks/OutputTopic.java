package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Reads a peer's output topic as a downstream service would: read_committed. */
final class OutputTopic<V> {

  private final String bootstrap;
  private final String topic;
  private final int partitions;
  private final Deserializer<V> values;

  OutputTopic(String bootstrap, String topic, int partitions, Deserializer<V> values) {
    this.bootstrap = bootstrap;
    this.topic = topic;
    this.partitions = partitions;
    this.values = values;
  }

  private KafkaConsumer<String, V> open() {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
    p.put(ConsumerConfig.RECEIVE_BUFFER_CONFIG, Consumers.RECEIVE_BUFFER_BYTES);
    KafkaConsumer<String, V> consumer = new KafkaConsumer<>(p, new StringDeserializer(), values);
    List<TopicPartition> tps = new ArrayList<>();
    for (int i = 0; i < partitions; i++) {
      tps.add(new TopicPartition(topic, i));
    }
    consumer.assign(tps);
    consumer.seekToBeginning(tps);
    return consumer;
  }

  /** The last committed totals per merchant. */
  Map<String, V> latest() {
    Map<String, V> out = new HashMap<>();
    readAll(r -> out.put(r.key(), r.value()));
    return out;
  }

  /** The committed records of the topic. */
  long count() {
    long[] count = {0};
    readAll(r -> count[0]++);
    return count[0];
  }

  /** Hands each committed record, from the beginning to the end as of now, to {@code onRecord}. */
  private void readAll(Consumer<ConsumerRecord<String, V>> onRecord) {
    try (KafkaConsumer<String, V> consumer = open()) {
      Map<TopicPartition, Long> end = consumer.endOffsets(consumer.assignment());
      long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
      while (end.entrySet().stream().anyMatch(e -> consumer.position(e.getKey()) < e.getValue())) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("output topic [" + topic + "] not read to its end within 2 minutes");
        }
        for (ConsumerRecord<String, V> r : consumer.poll(Duration.ofMillis(200))) {
          onRecord.accept(r);
        }
      }
    }
  }

  /**
   * Follows the topic from its beginning on a new thread, handing each committed record to
   * {@code onRecord}, until {@code done} or the thread is interrupted.
   */
  Thread follow(Consumer<ConsumerRecord<String, V>> onRecord, BooleanSupplier done) {
    Thread t = new Thread(() -> {
      try (KafkaConsumer<String, V> consumer = open()) {
        while (!done.getAsBoolean() && !Thread.currentThread().isInterrupted()) {
          for (ConsumerRecord<String, V> r : consumer.poll(Duration.ofMillis(100))) {
            onRecord.accept(r);
          }
        }
      } catch (InterruptException e) {
        // stopped
      }
    }, "output-follower-" + topic);
    t.setDaemon(true);
    t.start();
    return t;
  }
}
