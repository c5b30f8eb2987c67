package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.PipelineSettings;
import io.micrometer.core.instrument.search.Search;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A dead-letter topic that refuses dead letters (its max.message.bytes lowered under a running
 * pipeline) holds its partition back loudly (ERROR, {@code fencepost.dead-letter.failures}) and never
 * skips the record, and the partition goes on by itself once the topic is fixed: the dead letter is
 * published once, the records after it applied once. The refusals can wedge the dead-letter producer
 * (it then never settles a send again), so the publisher must replace it.
 */
@Tag("integration")
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class DeadLetterLivenessIT {

  private static KafkaBroker broker;
  private static JournalDatabase postgres;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.create().start();
    postgres = Postgres.shared().createDatabase("dead_letter_liveness_it");
    postgres.installSchema();
  }

  @AfterAll
  static void stop() {
    broker.close();
    Postgres.shared().dropDatabase(postgres);
  }

  @Test
  void aPartitionHeldBackByARefusingDeadLetterTopicGoesOnOnceTheTopicIsFixed() throws Exception {
    String in = KafkaBroker.uniqueName("dlt-refusing");
    String dlt = in + ".dlt";
    broker.createTopic(in, 1);
    broker.createTopic(dlt, 1);
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    ActorSystem<Void> system = KafkaPipelineIT.node("dlt-refusing", postgres);
    try {
      FencepostMeters.get(system).use(meters);
      PipelineSettings s = PipelineSettings.create(system, "dlt-refusing").withBootstrapServers(broker.bootstrapServers())
          .withTopics(List.of(in)).withGroupId(KafkaBroker.uniqueName("dlt-refusing"))
          .withBatch(10, Duration.ofMillis(20));
      s = s.withRetryBackoff(s.retryBackoff().withMax(Duration.ofSeconds(1)))
          .withDeadLetter(s.deadLetter().withProducer(Map.of("delivery.timeout.ms", "6000", "request.timeout.ms",
              "3000")));
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "dlt-refusing"),
          new KafkaPipelineIT.PaymentDeserializer(), s).start();
      send(in, List.of("p1,m1,100", "p2,m1,100"));
      await("the first payments applied", Duration.ofMinutes(1), () -> applied(pipeline) == 2);

      // Smaller than any dead letter, its headers alone.
      broker.setTopicConfig(dlt, TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "60");
      send(in, List.of("not a payment", "p3,m1,100", "p4,m2,100"));
      await("the refused dead letter reported at ERROR on the meter (10 failed attempts)", Duration.ofMinutes(1),
          () -> failures(meters) >= 10);
      assertEquals(2, applied(pipeline), "nothing past the record whose dead letter is not published");
      assertEquals(0, deadLetters(dlt).size());

      broker.setTopicConfig(dlt, TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "1048588");
      await("the partition goes on after the fix", Duration.ofSeconds(90), () -> applied(pipeline) == 4);
      List<String> published = deadLetters(dlt);
      assertEquals(List.of("not a payment"), published, "the dead letter published once");
      assertEquals(1, views(pipeline).get(0).deadLettered());
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private static void send(String topic, List<String> values) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (String v : values) {
        producer.send(new ProducerRecord<>(topic, 0, "m", v)).get(30, TimeUnit.SECONDS);
      }
    }
  }

  private static double failures(SimpleMeterRegistry meters) {
    return Search.in(meters).name("fencepost.dead-letter.failures").counters().stream().mapToDouble(c -> c.count()).sum();
  }

  private static long applied(Pipeline pipeline) throws Exception {
    return views(pipeline).stream().mapToLong(PartitionView::appliedRecords).sum();
  }

  private static List<PartitionView> views(Pipeline pipeline) throws Exception {
    return pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  /** The values of the dead letters in {@code topic}, in order. */
  private static List<String> deadLetters(String topic) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
        new ByteArrayDeserializer())) {
      TopicPartition tp = new TopicPartition(topic, 0);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long end = consumer.endOffsets(List.of(tp)).get(tp);
      List<String> values = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (consumer.position(tp) < end && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(r -> values.add(new String(r.value(), StandardCharsets.UTF_8)));
      }
      return values;
    }
  }


  private static void await(String what, Duration timeout, BooleanSupplierWithException condition) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.get()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + timeout.toSeconds() + " s: " + what);
      }
      Thread.sleep(100);
    }
  }

  private interface BooleanSupplierWithException {
    boolean get() throws Exception;
  }
}
