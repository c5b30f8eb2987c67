package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.internal.BatchEvent;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.kafka.QueryOptions;
import io.fencepost.kafka.QueryResult;
import io.fencepost.kafka.QueryTarget;
import io.fencepost.errors.PositionNotReachedException;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.fencepost.embedded.Topics;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The Kafka pipeline on one cluster node: real broker, real PostgreSQL journal. */
@Tag("integration")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class KafkaPipelineIT {

  private static KafkaBroker broker;
  private static JournalDatabase postgres;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.create().start();
    postgres = Postgres.shared().createDatabase("pipeline_it");
    postgres.installSchema();
  }

  @AfterAll
  static void stop() {
    broker.close();
    Postgres.shared().dropDatabase(postgres);
  }

  /** Values are "paymentId,merchant,cents". */
  static final class PaymentDeserializer implements Deserializer<TestLedger.Payment> {
    @Override
    public TestLedger.Payment deserialize(String topic, byte[] data) {
      String[] f = new String(data, StandardCharsets.UTF_8).split(",");
      return new TestLedger.Payment(f[0], f[1], Long.parseLong(f[2]));
    }
  }

  /** Needs its configuration: "payment.currency" from the consumer's properties, as schema-registry clients do. */
  static final class ConfiguredDeserializer implements Deserializer<TestLedger.Payment> {
    volatile Map<String, ?> configs;
    volatile Boolean isKey;
    volatile boolean closed;

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
      this.configs = Map.copyOf(configs);
      this.isKey = isKey;
    }

    @Override
    public TestLedger.Payment deserialize(String topic, byte[] data) {
      if (configs == null || !"EUR".equals(configs.get("payment.currency"))) {
        throw new IllegalStateException("not configured: " + configs);
      }
      return new PaymentDeserializer().deserialize(topic, data);
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  static ActorSystem<Void> node(String name, JournalDatabase db) {
    Config config = ClusterNodes.node(name, 0, List.of())
        .withFallback(db.pekkoConfig())
        .withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), name, config);
    ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
    return system;
  }

  static long[] produce(String topic, int partitions, int count) {
    return produce(topic, partitions, count, "pay-");
  }

  static long[] produce(String topic, int partitions, int count, String idPrefix) {
    return produceTo(broker, topic, partitions, count, idPrefix, 0);
  }

  static long[] produceTo(KafkaBroker broker, String topic, int partitions, int count, String idPrefix) {
    return produceTo(broker, topic, partitions, count, idPrefix, 0);
  }

  /**
   * Produces round-robin over partitions; {@code perSecond} 0 for as fast as possible. Counts only
   * acknowledged records: a send the broker refused (an idempotent producer on a loaded machine can
   * have its sequence refused, {@code OutOfOrderSequenceException}) is sent again on a new producer,
   * so that the topic holds exactly {@code count} records.
   */
  static long[] produceTo(KafkaBroker broker, String topic, int partitions, int count, String idPrefix,
      int perSecond) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    AtomicLongArray perPartition = new AtomicLongArray(partitions);
    List<Integer> pending = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      pending.add(i);
    }
    long[] startEnds = logEnds(broker, topic, partitions);
    long start = System.nanoTime();
    boolean resent = false;
    for (int round = 0; !pending.isEmpty(); round++) {
      if (round == 5) {
        throw new IllegalStateException(pending.size() + " records still refused after 5 rounds of sends");
      }
      List<Integer> refused = java.util.Collections.synchronizedList(new ArrayList<>());
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(),
          new StringSerializer())) {
        for (int n = 0; n < pending.size(); n++) {
          int i = pending.get(n);
          int partition = i % partitions;
          producer.send(new ProducerRecord<>(topic, partition, "m" + (i % 97), idPrefix + i + ",m" + (i % 97) + ","
              + (i % 1000)), (md, e) -> {
                if (e == null) {
                  perPartition.incrementAndGet(partition);
                } else {
                  refused.add(i);
                }
              });
          if (perSecond > 0 && round == 0) {
            long wait = start + (long) ((n + 1) * 1e9 / perSecond) - System.nanoTime();
            if (wait > 1_000_000) {
              try {
                Thread.sleep(wait / 1_000_000);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
              }
            }
          }
        }
        producer.flush();
      }
      if (!refused.isEmpty()) {
        System.out.println("produceTo " + topic + ": " + refused.size() + " sends refused in round " + round
            + "; sending them again");
      }
      resent |= !refused.isEmpty();
      pending = new ArrayList<>(refused);
    }
    long[] out = new long[partitions];
    for (int i = 0; i < partitions; i++) {
      out[i] = perPartition.get(i);
    }
    if (resent) {
      // A refused send must not have been written after all: the log grew by exactly what was acknowledged.
      long[] ends = logEnds(broker, topic, partitions);
      for (int i = 0; i < partitions; i++) {
        if (ends[i] - startEnds[i] != out[i]) {
          throw new IllegalStateException("partition " + i + " of " + topic + " grew by " + (ends[i] - startEnds[i])
              + " records, " + out[i] + " were acknowledged: a refused send was written after all");
        }
      }
    }
    return out;
  }

  /** The log end of each partition of {@code topic}. */
  private static long[] logEnds(KafkaBroker broker, String topic, int partitions) {
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (int i = 0; i < partitions; i++) {
      latest.put(new TopicPartition(topic, i), OffsetSpec.latest());
    }
    try (Admin admin = broker.admin()) {
      Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = admin.listOffsets(latest).all()
          .get(30, TimeUnit.SECONDS);
      long[] out = new long[partitions];
      for (int i = 0; i < partitions; i++) {
        out[i] = ends.get(new TopicPartition(topic, i)).offset();
      }
      return out;
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the log ends of " + topic + ": " + e, e);
    }
  }

  static PipelineSettings settings(ActorSystem<?> system, String name, String topic) {
    return PipelineSettings.create(system, name)
        .withBootstrapServers(broker.bootstrapServers())
        .withTopics(List.of(topic))
        .withBatch(500, Duration.ofMillis(20));
  }

  static Map<Long, Integer> creditsPerOffset(ActorSystem<?> system, PartitionId partition) throws Exception {
    Map<Long, Integer> out = new TreeMap<>();
    for (TestLedger.Credited c : credits(system, partition)) {
      out.merge(c.offset(), 1, Integer::sum);
    }
    return out;
  }

  /** Every credit journaled for a partition, in journal order. */
  static List<TestLedger.Credited> credits(ActorSystem<?> system, PartitionId partition) throws Exception {
    JdbcReadJournal journal = PersistenceQuery.get(system)
        .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
    List<TestLedger.Credited> out = new ArrayList<>();
    journal.currentEventsByPersistenceId(partition.persistenceId(), 0, Long.MAX_VALUE)
        .runForeach(env -> {
          for (Object e : ((BatchEvent) env.event()).events()) {
            out.add((TestLedger.Credited) e);
          }
        }, system).toCompletableFuture().get(60, TimeUnit.SECONDS);
    return out;
  }

  static void awaitApplied(Pipeline pipeline, long expectedTotal, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    long applied = 0;
    List<PartitionView> views = List.of();
    while (System.nanoTime() < deadline) {
      applied = 0;
      views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      for (PartitionView v : views) {
        applied += v.appliedRecords();
      }
      if (applied >= expectedTotal) {
        return;
      }
      Thread.sleep(250);
    }
    // The partitions' own account goes into the failure: CI shows the assertion, not the log.
    throw new AssertionError("applied " + applied + " of " + expectedTotal + " within " + timeout + "; partitions: "
        + views);
  }

  @Test
  void twelvePartitionsTwoHundredThousandRecordsEachAppliedExactlyOnce() throws Exception {
    String topic = KafkaBroker.uniqueName("payments");
    int partitions = 12;
    int records = 200_000;
    broker.createTopic(topic, partitions);
    long[] produced = produce(topic, partitions, records);

    ActorSystem<Void> system = node("single", postgres);
    try {
      PipelineSettings settings = settings(system, "single", topic).withGroupId(KafkaBroker.uniqueName("ledger"));
      long start = System.nanoTime();
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "single"), new PaymentDeserializer(),
          settings).start();
      awaitApplied(pipeline, records, Duration.ofMinutes(5));
      double seconds = (System.nanoTime() - start) / 1e9;
      System.out.printf("applied %d records on 12 partitions in %.1f s: %.0f records/s%n", records, seconds,
          records / seconds);
      List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);

      assertEquals(partitions, views.size());
      Map<TopicPartition, Long> expectedCommitted = new HashMap<>();
      for (PartitionView v : views) {
        int p = v.partition().partition();
        assertEquals(produced[p], v.nextOffset().getAsLong(), "next offset of partition " + p);
        assertEquals(produced[p], v.appliedRecords(), "applied on partition " + p);
        Map<Long, Integer> credits = creditsPerOffset(system, v.partition());
        assertEquals(produced[p], credits.size(), "distinct offsets credited on partition " + p);
        assertTrue(credits.values().stream().allMatch(n -> n == 1), "every offset credited once on " + p);
        expectedCommitted.put(new TopicPartition(topic, p), produced[p]);
      }
      try (Admin admin = broker.admin()) {
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(settings.groupId())
            .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        Map<TopicPartition, Long> actual = new HashMap<>();
        committed.forEach((tp, om) -> actual.put(tp, om.offset()));
        assertEquals(expectedCommitted, actual, "Kafka committed offsets equal the actors' next offsets");
      }
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  /**
   * A single node with Pekko's local provider answers queries about its partitions, waits for a
   * bound, and lists its partitions in the cluster view (itself being the cluster).
   */
  @Test
  void aSingleNodeWithTheLocalProviderAnswersQueriesAndListsItsPartitions() throws Exception {
    String topic = KafkaBroker.uniqueName("queries");
    broker.createTopic(topic, 3);
    produce(topic, 3, 30);   // 10 records on each partition
    Config config = ConfigFactory.parseString("pekko.actor.provider = local")
        .withFallback(postgres.pekkoConfig()).withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "single-node", config);
    try {
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "queries"), new PaymentDeserializer(),
          settings(system, "queries", topic).withGroupId(KafkaBroker.uniqueName("queries"))).start();
      awaitApplied(pipeline, 30, Duration.ofMinutes(1));
      for (int p = 0; p < 3; p++) {
        QueryResult<Long> r = pipeline.query(QueryTarget.partition(topic, p), new TestLedger.Credits())
            .toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(10L, r.reply(), "partition " + p);
        assertEquals(10, r.appliedNextOffset());
        assertTrue(r.local());
        assertEquals(system.address().toString(), r.node());
      }
      ExecutionException notYet = assertThrows(ExecutionException.class, () -> pipeline.query(
          QueryTarget.partition(topic, 0), new TestLedger.Credits(),
          QueryOptions.defaults().afterOffset(10).withTimeout(Duration.ofMillis(500)))
          .toCompletableFuture().get(30, TimeUnit.SECONDS));
      assertInstanceOf(PositionNotReachedException.class, notYet.getCause(), notYet.getCause().toString());
      CompletableFuture<QueryResult<Long>> bounded = pipeline.query(QueryTarget.partition(topic, 0),
          new TestLedger.Credits(), QueryOptions.defaults().afterOffset(10).withTimeout(Duration.ofSeconds(30)))
          .toCompletableFuture();
      produce(topic, 3, 3, "more-");   // offset 10 of each partition
      QueryResult<Long> after = bounded.get(60, TimeUnit.SECONDS);
      assertEquals(11L, after.reply(), "answered once the record at offset 10 was applied");
      assertEquals(11, after.appliedNextOffset());
      List<PartitionView> cluster = pipeline.clusterStatus().toCompletableFuture().get(30, TimeUnit.SECONDS);
      assertEquals(List.of(0, 1, 2), cluster.stream().map(v -> v.partition().partition()).toList());
      for (PartitionView v : cluster) {
        assertEquals(system.address().toString(), v.ownerNode(), v.toString());
      }
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void theValueDeserializerIsConfiguredWithTheConsumersPropertiesAndClosedWhenThePipelineStops() throws Exception {
    String topic = KafkaBroker.uniqueName("configured");
    broker.createTopic(topic, 1);
    produce(topic, 1, 20);
    ActorSystem<Void> system = node("configured", postgres);
    try {
      ConfiguredDeserializer deserializer = new ConfiguredDeserializer();
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "configured"), deserializer,
          settings(system, "configured", topic).withGroupId(KafkaBroker.uniqueName("configured"))
              .withKafkaClient("payment.currency", "EUR")).start();
      awaitApplied(pipeline, 20, Duration.ofMinutes(1));
      List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      assertEquals(0, views.get(0).deadLettered(), "every value deserialized: " + views);
      assertEquals(false, deserializer.closed);
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      assertEquals(Boolean.FALSE, deserializer.isKey);
      assertEquals(broker.bootstrapServers(), deserializer.configs.get(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG));
      assertTrue(deserializer.closed, "closed when the pipeline stopped");
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void seekOnAssignUsesTheActorsOffsetWhateverTheBrokerHasCommitted() throws Exception {
    String topic = KafkaBroker.uniqueName("seek");
    broker.createTopic(topic, 2);
    produce(topic, 2, 200);   // 100 per partition
    String group = KafkaBroker.uniqueName("seek-group");

    ActorSystem<Void> system = node("seek", postgres);
    try {
      PipelineSettings settings = settings(system, "seek", topic).withGroupId(group);
      Pipeline first = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "seek"), new PaymentDeserializer(),
          settings).start();
      awaitApplied(first, 200, Duration.ofMinutes(2));
      first.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);

      // By hand: partition 0's committed offset goes back to 10 (older), partition 1's forward to 150 (newer).
      try (Admin admin = broker.admin()) {
        admin.alterConsumerGroupOffsets(group, Map.of(
            new TopicPartition(topic, 0), new OffsetAndMetadata(10),
            new TopicPartition(topic, 1), new OffsetAndMetadata(150))).all().get(30, TimeUnit.SECONDS);
      }
      produce(topic, 2, 20, "later-");   // 10 more per partition: offsets 100..109

      Pipeline second = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "seek"), new PaymentDeserializer(),
          settings).start();
      awaitApplied(second, 220, Duration.ofMinutes(2));
      List<PartitionView> views = second.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      second.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      for (PartitionView v : views) {
        assertEquals(110, v.nextOffset().getAsLong());
        assertEquals(110, v.appliedRecords());
        assertEquals(0, v.droppedRedelivery(), "seeked to the actor's offset, so nothing was re-read on " + v.partition());
        Map<Long, Integer> credits = creditsPerOffset(system, v.partition());
        assertEquals(110, credits.size());
        assertTrue(credits.values().stream().allMatch(n -> n == 1));
      }
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  /** Publishes each payment's id to {@code <topic>-out} through the outbox. */
  static final class Forwarder extends PartitionActor<TestLedger.Payment, Long, String> {
    Forwarder(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<String> onRecord(Long count, Inbound<TestLedger.Payment> in) {
      TestLedger.Payment p = in.value();
      return Effects.persist(p.paymentId()).andPublish(in.partition().topic() + "-out", p.merchant(), p.paymentId());
    }

    @Override
    protected Long applyEvent(Long count, String paymentId) {
      return count + 1;
    }
  }

  @Test
  void theOutboxRelayResumesFromItsStoredPositionAfterARestartPublishingEachRecordOnce() throws Exception {
    String in = KafkaBroker.uniqueName("relay");
    String out = in + "-out";
    broker.createTopic(in, 2);
    broker.createTopic(out, 2);
    String group = KafkaBroker.uniqueName("relay-group");
    for (int run = 0; run < 2; run++) {
      ActorSystem<Void> system = node("relay" + run, postgres);
      try {
        PipelineSettings s = settings(system, "relay", in).withGroupId(group);
        s = s.withOutbox(s.outbox().withEnabled(true).withStorePositionEvery(Duration.ofMillis(100)));
        KafkaPipeline.create(system, Forwarder::new, new PaymentDeserializer(), s).start();
        produceTo(broker, in, 2, 300, "run" + run + "-");
        awaitStableEnd(broker, out, 300L * (run + 1), Duration.ofSeconds(90));
      } finally {
        system.terminate();   // graceful: the pipeline drains, the relays store their positions
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    }
    Map<String, Integer> ids = new HashMap<>();
    Map<String, Integer> payments = new HashMap<>();
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p, new StringDeserializer(),
        new StringDeserializer())) {
      List<TopicPartition> tps = List.of(new TopicPartition(out, 0), new TopicPartition(out, 1));
      consumer.assign(tps);
      long end = consumer.endOffsets(tps).values().stream().mapToLong(Long::longValue).sum();
      int read = 0;
      while (read < end) {
        for (var r : consumer.poll(Duration.ofSeconds(1))) {
          ids.merge(new String(r.headers().lastHeader(OutboxRecord.ID_HEADER).value(), StandardCharsets.UTF_8), 1,
              Integer::sum);
          payments.merge(r.value(), 1, Integer::sum);
          read++;
        }
      }
    }
    assertEquals(600, payments.size(), "distinct payments published");
    assertTrue(payments.values().stream().allMatch(n -> n == 1), "no payment published twice: " + payments.size());
    assertEquals(600, ids.size(), "distinct outbox ids");
  }

  /** Waits until the topic's end offsets sum to at least {@code expected} and stay there 3 s; asserts exactly it. */
  static void awaitStableEnd(KafkaBroker broker, String topic, long expected, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    long stableSince = 0;
    long last = -1;
    while (System.nanoTime() < deadline) {
      long end = Topics.recordCount(broker.bootstrapServers(), topic);
      if (end != last) {
        last = end;
        stableSince = System.nanoTime();
      }
      if (end >= expected && System.nanoTime() - stableSince > TimeUnit.SECONDS.toNanos(3)) {
        assertEquals(expected, end, "records in " + topic);
        return;
      }
      Thread.sleep(250);
    }
    throw new AssertionError(topic + " reached " + last + " records, expected " + expected + " within " + timeout);
  }
}
