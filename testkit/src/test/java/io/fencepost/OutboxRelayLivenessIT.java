package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.micrometer.core.instrument.search.Search;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The outbox relay heals by itself once the cause of its failures is gone, says so at ERROR and on
 * its meters while it cannot publish, publishes the records before a failing one once and bounds the
 * copies, and the downstream pipeline applies each record once.
 */
@Tag("integration")
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class OutboxRelayLivenessIT {

  private static final int PAYMENTS = 1_000;
  private static final String RELAY_CLIENT = "outbox-relay-it";

  private static KafkaBroker broker;
  private static JournalDatabase postgres;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.create().start();   // auto.create.topics.enable is false
    postgres = Postgres.shared().createDatabase("outbox_relay_liveness_it");
    postgres.installSchema();
  }

  @AfterAll
  static void stop() {
    broker.close();
    Postgres.shared().dropDatabase(postgres);
  }

  /** Counts each downstream record; its business key is the outbox id (the default for a relay's copies). */
  static final class Downstream extends PartitionActor<String, Long, String> {
    Downstream(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<String> onRecord(Long count, Inbound<String> in) {
      return Effects.persist(in.value());
    }

    @Override
    protected Long applyEvent(Long count, String paymentId) {
      return count + 1;
    }
  }

  /**
   * The outbox topic refuses every record (max.message.bytes 40) while all payments are journaled;
   * the relay's producer thread is then killed as the split-batch stack overflow of kafka-clients
   * kills it (a producer that never settles a send again); then the topic is fixed.
   */
  @Test
  void aRelayWhoseTopicRefusedRecordsAndWhoseProducerDiedPublishesEveryRecordOnceTheTopicIsFixed() throws Exception {
    String in = KafkaBroker.uniqueName("refusing");
    String out = in + "-out";
    broker.createTopic(out, 2, Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "40"));
    runScenario("refusing", in, () -> {
      assertTrue(killRelayProducerThreads() > 0, "the relay's producer thread was found and killed");
      broker.setTopicConfig(out, TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "1048588");
    });
  }

  /** The outbox topic does not exist (auto-create off) until the operator creates it. */
  @Test
  void aRelayWhoseTopicIsMissingPublishesEveryRecordOnceItIsCreated() throws Exception {
    String in = KafkaBroker.uniqueName("missing");
    runScenario("missing", in, () -> broker.createTopic(in + "-out", 2));
  }

  private interface Fix {
    void run() throws Exception;
  }

  /** Payments into {@code in}; {@link KafkaPipelineIT.Forwarder} publishes each to {@code in-out}. */
  private void runScenario(String name, String in, Fix fix) throws Exception {
    String out = in + "-out";
    broker.createTopic(in, 2);
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    ActorSystem<Void> system = KafkaPipelineIT.node(name, postgres);
    try {
      FencepostMeters.get(system).use(meters);
      PipelineSettings s = PipelineSettings.create(system, name).withBootstrapServers(broker.bootstrapServers())
          .withTopics(List.of(in)).withBatch(100, Duration.ofMillis(20)).withGroupId(KafkaBroker.uniqueName(name));
      s = s.withOutbox(s.outbox().withEnabled(true).withStorePositionEvery(Duration.ofMillis(100))
          .withErrorAfter(Duration.ofSeconds(3))
          .withProducer(Map.of("client.id", RELAY_CLIENT, "delivery.timeout.ms", "12000", "request.timeout.ms", "5000",
              "max.block.ms", "3000")));
      Pipeline upstream = KafkaPipeline.create(system, KafkaPipelineIT.Forwarder::new,
          new KafkaPipelineIT.PaymentDeserializer(), s)
          .start();
      KafkaPipelineIT.produceTo(broker, in, 2, PAYMENTS, name + "-");
      Await.until("every payment journaled upstream", Duration.ofMinutes(2), () -> applied(upstream) == PAYMENTS);
      Await.until("both relays report failing (fencepost.outbox.relay.failing = 1)", Duration.ofMinutes(1),
          () -> Search.in(meters).name("fencepost.outbox.relay.failing").gauges().stream()
              .filter(g -> g.value() == 1).count() == 2);
      double failedRounds = Search.in(meters).name("fencepost.outbox.relay.failures").counters().stream()
          .mapToDouble(c -> c.count()).sum();
      assertTrue(failedRounds >= 2, "failed rounds counted: " + failedRounds);
      assertEquals(0, Search.in(meters).name("fencepost.outbox.relay.lag").gauges().stream()
          .filter(g -> g.value() == 0).count(), "no relay passed its entries");

      fix.run();
      long fixedAt = System.nanoTime();
      Await.until("every outbox record published after the fix", Duration.ofSeconds(90),
          () -> published(out).size() == PAYMENTS);
      long healedMs = (System.nanoTime() - fixedAt) / 1_000_000;
      Await.until("relays no longer failing", Duration.ofSeconds(30),
          () -> Search.in(meters).name("fencepost.outbox.relay.failing").gauges().stream().allMatch(g -> g.value() == 0));
      Map<String, Integer> ids = published(out);
      int copies = ids.values().stream().mapToInt(n -> n - 1).sum();
      System.out.printf("[%s] healed %d ms after the fix; %d records for %d outbox ids (%d copies)%n", name, healedMs,
          copies + ids.size(), ids.size(), copies);
      assertEquals(PAYMENTS, ids.size(), "every outbox record published");
      assertTrue(copies <= 2, "copies bounded by the record in flight per relay when its round failed: " + copies);

      PipelineSettings d = PipelineSettings.create(system, name + "-down").withBootstrapServers(broker.bootstrapServers())
          .withTopics(List.of(out)).withBatch(100, Duration.ofMillis(20)).withGroupId(KafkaBroker.uniqueName(name + "-down"));
      Pipeline downstream = KafkaPipeline.create(system, Downstream::new, new StringDeserializer(), d).start();
      Await.until("the downstream pipeline applies every record", Duration.ofMinutes(1),
          () -> applied(downstream) + droppedByKey(downstream) == PAYMENTS + copies);
      assertEquals(PAYMENTS, applied(downstream), "each published record applied once downstream");
      assertEquals(copies, droppedByKey(downstream), "each copy dropped by its outbox id");
      downstream.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      upstream.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private static long applied(Pipeline pipeline) throws Exception {
    return views(pipeline).stream().mapToLong(PartitionView::appliedRecords).sum();
  }

  private static long droppedByKey(Pipeline pipeline) throws Exception {
    return views(pipeline).stream().mapToLong(PartitionView::droppedByKey).sum();
  }

  private static List<PartitionView> views(Pipeline pipeline) throws Exception {
    return pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  /** Each outbox id in {@code topic} with its number of copies. */
  private static Map<String, Integer> published(String topic) {
    Map<String, Integer> ids = new HashMap<>();
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p, new StringDeserializer(),
        new StringDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      consumer.partitionsFor(topic, Duration.ofSeconds(10)).forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      long end = consumer.endOffsets(tps).values().stream().mapToLong(Long::longValue).sum();
      int read = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (read < end && System.nanoTime() < deadline) {
        for (var r : consumer.poll(Duration.ofMillis(500))) {
          ids.merge(new String(r.headers().lastHeader(OutboxRecord.ID_HEADER).value(), StandardCharsets.UTF_8), 1,
              Integer::sum);
          read++;
        }
      }
    } catch (RuntimeException e) {
      return Map.of();   // the topic does not exist yet
    }
    return ids;
  }


  /**
   * Kills the network thread of the relay's producer, as an Error thrown on it does: the producer
   * then accepts sends and never settles them.
   */
  @SuppressWarnings({"deprecation", "removal"})
  private static int killRelayProducerThreads() {
    int killed = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().equals("kafka-producer-network-thread | " + RELAY_CLIENT)) {
        t.stop();
        killed++;
      }
    }
    return killed;
  }
}
