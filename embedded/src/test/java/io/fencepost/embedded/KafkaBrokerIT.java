package io.fencepost.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.kafka.CommitterSettings;
import org.apache.pekko.kafka.ConsumerSettings;
import org.apache.pekko.kafka.Subscriptions;
import org.apache.pekko.kafka.javadsl.Committer;
import org.apache.pekko.kafka.javadsl.Consumer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class KafkaBrokerIT {

  private static final int PARTITIONS = 4;
  private static final int RECORDS = 100_000;

  @Test
  void recordsAndCommittedOffsetsSurviveARestartOnTheSameDirectory() throws Exception {
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("records");
      String group = KafkaBroker.uniqueName("group");
      broker.createTopic(topic, PARTITIONS);

      long t0 = System.nanoTime();
      long[] produced = produce(broker.bootstrapServers(), topic);
      System.out.printf("produced %d records in %d ms%n", RECORDS, (System.nanoTime() - t0) / 1_000_000);
      assertEquals(RECORDS, sum(produced));

      ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "broker-it");
      try {
        long t1 = System.nanoTime();
        long[] consumed = consumeAndCommit(system, broker.bootstrapServers(), topic, group);
        System.out.printf("consumed and committed %d records in %d ms%n", RECORDS, (System.nanoTime() - t1) / 1_000_000);
        assertEquals(toList(produced), toList(consumed), "records per partition, first read");

        Map<TopicPartition, Long> committedBefore = committed(broker, group);
        assertEquals(expectedCommitted(topic, produced), committedBefore);

        String bootstrapBefore = broker.bootstrapServers();
        broker.stop();
        broker.start();
        assertEquals(bootstrapBefore, broker.bootstrapServers(), "same address after restart");

        assertEquals(committedBefore, committed(broker, group), "committed offsets after restart");
        long[] reread = consumeAndCommit(system, broker.bootstrapServers(), topic, KafkaBroker.uniqueName("again"));
        assertEquals(toList(produced), toList(reread), "records per partition after restart");
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }

  private static long[] produce(String bootstrap, String topic) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    long[] perPartition = new long[PARTITIONS];
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < RECORDS; i++) {
        int partition = i % PARTITIONS;
        producer.send(new ProducerRecord<>(topic, partition, "key-" + i, "value-" + i));
        perPartition[partition]++;
      }
      producer.flush();
    }
    return perPartition;
  }

  private static long[] consumeAndCommit(ActorSystem<?> system, String bootstrap, String topic, String group)
      throws Exception {
    AtomicLongArray counts = new AtomicLongArray(PARTITIONS);
    ConsumerSettings<String, String> settings =
        ConsumerSettings.create(system, new StringDeserializer(), new StringDeserializer())
            .withBootstrapServers(bootstrap)
            .withGroupId(group)
            .withStopTimeout(Duration.ZERO)
            .withProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    Consumer.DrainingControl<?> control = Consumer.committableSource(settings, Subscriptions.topics(topic))
        .map(msg -> {
          counts.incrementAndGet(msg.record().partition());
          return msg.committableOffset();
        })
        .toMat(Committer.sink(CommitterSettings.create(system)), Consumer::createDrainingControl)
        .run(system);
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (total(counts) < RECORDS && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    // Give a duplicate delivery, if any, the chance to show up before the stream stops.
    Thread.sleep(500);
    control.drainAndShutdown(system.executionContext()).toCompletableFuture().get(60, TimeUnit.SECONDS);
    long[] out = new long[PARTITIONS];
    for (int i = 0; i < PARTITIONS; i++) {
      out[i] = counts.get(i);
    }
    return out;
  }

  private static Map<TopicPartition, Long> committed(KafkaBroker broker, String group) throws Exception {
    try (Admin admin = broker.admin()) {
      Map<TopicPartition, OffsetAndMetadata> offsets =
          admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      Map<TopicPartition, Long> out = new HashMap<>();
      offsets.forEach((tp, om) -> out.put(tp, om.offset()));
      return out;
    }
  }

  private static Map<TopicPartition, Long> expectedCommitted(String topic, long[] produced) {
    Map<TopicPartition, Long> out = new HashMap<>();
    for (int i = 0; i < produced.length; i++) {
      out.put(new TopicPartition(topic, i), produced[i]);
    }
    return out;
  }

  private static long total(AtomicLongArray a) {
    long s = 0;
    for (int i = 0; i < a.length(); i++) {
      s += a.get(i);
    }
    return s;
  }

  private static long sum(long[] a) {
    long s = 0;
    for (long v : a) {
      s += v;
    }
    return s;
  }

  private static List<Long> toList(long[] a) {
    return Arrays.stream(a).boxed().toList();
  }
}
