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
import org.apache.kafka.common.serialization.StringDeserializer;

/** Reads the Kafka Streams peer's output topic as a downstream service would: read_committed. */
final class OutputTopic {

  private final String bootstrap;
  private final String topic;
  private final int partitions;

  OutputTopic(String bootstrap, String topic, int partitions) {
    this.bootstrap = bootstrap;
    this.topic = topic;
    this.partitions = partitions;
  }

  private KafkaConsumer<String, Totals> open() {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
    p.put(ConsumerConfig.RECEIVE_BUFFER_CONFIG, Consumers.RECEIVE_BUFFER_BYTES);
    KafkaConsumer<String, Totals> consumer = new KafkaConsumer<>(p, new StringDeserializer(),
        Totals.SERDE.deserializer());
    List<TopicPartition> tps = new ArrayList<>();
    for (int i = 0; i < partitions; i++) {
      tps.add(new TopicPartition(topic, i));
    }
    consumer.assign(tps);
    consumer.seekToBeginning(tps);
    return consumer;
  }

  /** The last committed totals per merchant. */
  Map<String, Totals> latest() {
    Map<String, Totals> out = new HashMap<>();
    try (KafkaConsumer<String, Totals> consumer = open()) {
      Map<TopicPartition, Long> end = consumer.endOffsets(consumer.assignment());
      long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
      while (end.entrySet().stream().anyMatch(e -> consumer.position(e.getKey()) < e.getValue())) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("output topic [" + topic + "] not read to its end within 2 minutes");
        }
        for (ConsumerRecord<String, Totals> r : consumer.poll(Duration.ofMillis(200))) {
          out.put(r.key(), r.value());
        }
      }
    }
    return out;
  }

  /**
   * Follows the topic from its beginning on a new thread, handing each committed record to
   * {@code onRecord}, until {@code done} or the thread is interrupted.
   */
  Thread follow(Consumer<ConsumerRecord<String, Totals>> onRecord, BooleanSupplier done) {
    Thread t = new Thread(() -> {
      try (KafkaConsumer<String, Totals> consumer = open()) {
        while (!done.getAsBoolean() && !Thread.currentThread().isInterrupted()) {
          for (ConsumerRecord<String, Totals> r : consumer.poll(Duration.ofMillis(100))) {
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
