package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.AutoOffsetReset;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.kafka.internal.LogProbe;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * Kafka offsets are not dense: transaction markers, aborted records (under read_committed) and
 * records deleted by retention leave holes. A partition actor refuses a batch that would skip an
 * offset unless the pipeline vouches, from the log, that nothing readable lies there; these tests
 * run that against a real broker.
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class OffsetGapsIT {

  private static KafkaBroker broker;
  private static JournalDatabase postgres;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.create().start();
    postgres = Postgres.shared().createDatabase("gaps_it");
    postgres.installSchema();
  }

  @AfterAll
  static void stop() {
    broker.close();
    Postgres.shared().dropDatabase(postgres);
  }

  /**
   * Writes {@code transactions} transactions of {@code size} payments to one partition; those whose
   * index is 1 modulo {@code abortEvery} are aborted. Returns the ids of the committed payments.
   */
  private static Set<String> transactional(String topic, int partition, int transactions, int size, int abortEvery) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, KafkaBroker.uniqueName("tx"));
    Set<String> committed = new HashSet<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      producer.initTransactions();
      for (int t = 0; t < transactions; t++) {
        producer.beginTransaction();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < size; i++) {
          String id = "p" + partition + "-t" + t + "-" + i;
          producer.send(new ProducerRecord<>(topic, partition, "m" + i, id + ",m" + (i % 5) + "," + (100 + i)));
          ids.add(id);
        }
        if (abortEvery > 0 && t % abortEvery == 1) {
          producer.flush();
          producer.abortTransaction();
        } else {
          producer.commitTransaction();
          committed.addAll(ids);
        }
      }
    }
    return committed;
  }

  private static long endOffset(String topic, int partition) throws Exception {
    try (Admin admin = broker.admin()) {
      TopicPartition tp = new TopicPartition(topic, partition);
      return admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all()
          .get(30, TimeUnit.SECONDS).get(tp).offset();
    }
  }

  @Test
  void theProbeSeesMarkersAndAbortedRecordsAsHolesAndReportsRecordsDeletedByRetention() throws Exception {
    String topic = KafkaBroker.uniqueName("probe");
    broker.createTopic(topic, 1);
    // Offsets: committed 0..9 + marker 10; aborted 11..15 + marker 16; committed 17..19 + marker 20.
    transactional(topic, 0, 1, 10, 0);
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, KafkaBroker.uniqueName("tx"));
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      producer.initTransactions();
      producer.beginTransaction();
      for (int i = 0; i < 5; i++) {
        producer.send(new ProducerRecord<>(topic, 0, "k", "aborted-" + i));
      }
      producer.flush();
      producer.abortTransaction();
      producer.beginTransaction();
      for (int i = 0; i < 3; i++) {
        producer.send(new ProducerRecord<>(topic, 0, "k", "late-" + i));
      }
      producer.commitTransaction();
    }
    assertEquals(21, endOffset(topic, 0));
    TopicPartition tp = new TopicPartition(topic, 0);
    Map<String, Object> probeProps = Map.of("bootstrap.servers", broker.bootstrapServers(), "isolation.level",
        "read_committed", "enable.auto.commit", "false", "auto.offset.reset", "earliest");
    try (LogProbe probe = new LogProbe(new KafkaConsumer<>(probeProps,
        new ByteArrayDeserializer(),
        new ByteArrayDeserializer()))) {
      LogProbe.Range all = probe.read(tp, 0, 21, Duration.ofSeconds(30));
      assertTrue(all.complete());
      TreeSet<Long> expected = LongStream.concat(LongStream.range(0, 10), LongStream.range(17, 20)).boxed()
          .collect(Collectors.toCollection(TreeSet::new));
      assertEquals(expected, all.readable());

      LogProbe.Range hole = probe.read(tp, 10, 17, Duration.ofSeconds(30));
      assertTrue(hole.complete());
      assertEquals(Set.of(), hole.readable(), "a marker, five aborted records and a marker: nothing readable");
      assertFalse(hole.deletedPart());

      try (Admin admin = broker.admin()) {
        admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(5))).all().get(30, TimeUnit.SECONDS);
      }
      LogProbe.Range deleted = probe.read(tp, 2, 8, Duration.ofSeconds(30));
      assertTrue(deleted.complete());
      assertEquals(5, deleted.logStart());
      assertTrue(deleted.deletedPart());
      assertEquals(new TreeSet<>(List.of(5L, 6L, 7L)), deleted.readable());
    }
  }

  @Test
  void aTransactionalTopicIsAppliedExactlyOnceAcrossItsMarkersAndAbortedRecords() throws Exception {
    String topic = KafkaBroker.uniqueName("tx-payments");
    broker.createTopic(topic, 2);
    // 60 transactions of 7 per partition, every third aborted (the last one committed): holes of 1
    // (marker) and 8 (7 aborted + marker) all through the log, inside batches and between them.
    Set<String> committed0 = transactional(topic, 0, 60, 7, 3);
    Set<String> committed1 = transactional(topic, 1, 60, 7, 3);
    assertEquals(40 * 7, committed0.size());
    long end0 = endOffset(topic, 0);
    long end1 = endOffset(topic, 1);
    assertEquals(60 * 8, end0, "60 transactions of 7 records and one marker each");

    ActorSystem<Void> system = KafkaPipelineIT.node("gaps", postgres);
    try {
      PipelineSettings settings = PipelineSettings.create(system, "gaps")
          .withBootstrapServers(broker.bootstrapServers())
          .withTopics(List.of(topic))
          .withGroupId(KafkaBroker.uniqueName("gaps"))
          .withBatch(50, Duration.ofMillis(20));
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "gaps"),
          new KafkaPipelineIT.PaymentDeserializer(), settings).start();
      long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
      List<PartitionView> views = List.of();
      while (System.nanoTime() < deadline) {
        views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
        if (views.size() == 2 && views.stream().allMatch(v -> v.nextOffset().isPresent()
            && v.nextOffset().getAsLong() >= (v.partition().partition() == 0 ? end0 - 1 : end1 - 1))) {
          break;
        }
        Thread.sleep(250);
      }
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      for (PartitionView v : views) {
        int p = v.partition().partition();
        Set<String> committed = p == 0 ? committed0 : committed1;
        // The last marker is never delivered: the stored offset stops right after the last record.
        assertEquals((p == 0 ? end0 : end1) - 1, v.nextOffset().getAsLong(), "next offset of partition " + p);
        assertEquals(committed.size(), v.appliedRecords(), "applied on partition " + p);
        Set<String> credited = new HashSet<>();
        for (TestLedger.Credited c : KafkaPipelineIT.credits(system, v.partition())) {
          assertTrue(credited.add(c.paymentId()), "credited once: " + c.paymentId());
        }
        assertEquals(committed, credited, "exactly the committed payments of partition " + p);
      }
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }
  @Test
  void recordsDeletedByRetentionBeforeTheyWereAppliedAreSkippedWithAnErrorAndTheRestApplied() throws Exception {
    String topic = KafkaBroker.uniqueName("retention");
    broker.createTopic(topic, 1);
    String group = KafkaBroker.uniqueName("retention");
    KafkaPipelineIT.produceTo(broker, topic, 1, 100, "early-", 0);
    // auto-offset-reset = latest: without the log-start check the consumer would jump over the
    // records that are still there, or (with the gap check) restart forever.
    Config latest = ConfigFactory.parseString(
        "fencepost.pipelines.retention.auto-offset-reset = latest");
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "retention",
        latest.withFallback(ClusterNodes.node("retention", 0, List.of()))
            .withFallback(postgres.pekkoConfig()).withFallback(ConfigFactory.load()));
    try {
      ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
      PartitionId partition = new PartitionId(group, topic, 0);
      // First run (pipeline "first", auto-offset-reset earliest): 200 records applied, offset stored.
      Pipeline first = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "retention"),
          new KafkaPipelineIT.PaymentDeserializer(), PipelineSettings.create(system, "first")
              .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic)).withGroupId(group)).start();
      awaitNext(first, 100, Duration.ofMinutes(1));
      KafkaPipelineIT.produceTo(broker, topic, 1, 100, "second-", 0);
      awaitNext(first, 200, Duration.ofMinutes(1));
      first.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);

      // While it is down: 100 more, of which retention deletes the first 50 (offsets 200..249).
      KafkaPipelineIT.produceTo(broker, topic, 1, 100, "third-", 0);
      try (Admin admin = broker.admin()) {
        admin.deleteRecords(Map.of(new TopicPartition(topic, 0), RecordsToDelete.beforeOffset(250)))
            .all().get(30, TimeUnit.SECONDS);
      }
      PipelineSettings settings = PipelineSettings.create(system, "retention")
          .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic)).withGroupId(group);
      assertEquals(AutoOffsetReset.LATEST, settings.autoOffsetReset());
      Pipeline second = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "retention"),
          new KafkaPipelineIT.PaymentDeserializer(), settings).start();
      PartitionView view = awaitNext(second, 300, Duration.ofMinutes(1));
      second.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      assertEquals(300, view.nextOffset().getAsLong());
      assertEquals(250, view.appliedRecords(), "the first run's 200 and the 50 retention left");
      Set<String> credited = new HashSet<>();
      KafkaPipelineIT.credits(system, partition).forEach(c -> credited.add(c.paymentId()));
      assertEquals(250, credited.size());
      for (int i = 250; i < 300; i++) {
        assertTrue(credited.contains("third-" + (i - 200)), "offset " + i + " applied");
      }
      assertFalse(credited.contains("third-49"), "deleted before it was read");
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void aStreamThatMissesRecordsIsRefusedAndTheConsumerReadsThemAgainFromTheStoredOffset() throws Exception {
    String topic = KafkaBroker.uniqueName("split");
    broker.createTopic(topic, 1);
    String group = KafkaBroker.uniqueName("split");
    TopicPartition tp = new TopicPartition(topic, 0);
    KafkaPipelineIT.produceTo(broker, topic, 1, 50, "a-", 0);
    ActorSystem<Void> system = KafkaPipelineIT.node("split", postgres);
    try {
      Pipeline pipeline = startBehindInterceptor(system, "split", topic, group);
      awaitNext(pipeline, 50, Duration.ofMinutes(1));
      // The stream will not see offsets 60..89 the first time: the batch it sends lacks them.
      int before = DroppingInterceptor.DROPS.get();
      DroppingInterceptor.arm(tp, 60, 90);
      KafkaPipelineIT.produceTo(broker, topic, 1, 150, "b-", 0);
      PartitionView view = awaitNext(pipeline, 200, Duration.ofMinutes(2));
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);

      assertEquals(30, DroppingInterceptor.DROPS.get() - before, "the interceptor hid offsets 60..89 once");
      assertEquals(200, view.nextOffset().getAsLong());
      assertEachOffsetAppliedOnce(system, view, 200);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void aFreshPartitionsFirstBatchMustStartWhereThePartitionStarts() throws Exception {
    String topic = KafkaBroker.uniqueName("fresh-split");
    broker.createTopic(topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    KafkaPipelineIT.produceTo(broker, topic, 1, 100, "f-", 0);
    // The very first batch lacks 10..29: with no stored offset to compare with, only the log tells.
    DroppingInterceptor.arm(tp, 10, 30);
    int before = DroppingInterceptor.DROPS.get();
    ActorSystem<Void> system = KafkaPipelineIT.node("fresh", postgres);
    try {
      Pipeline pipeline = startBehindInterceptor(system, "fresh", topic, KafkaBroker.uniqueName("fresh"));
      PartitionView view = awaitNext(pipeline, 100, Duration.ofMinutes(2));
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      assertEquals(20, DroppingInterceptor.DROPS.get() - before, "the interceptor hid offsets 10..29 once");
      assertEachOffsetAppliedOnce(system, view, 100);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void aFreshPartitionUnderLatestMustStartWhereItWasSeekedToNotWhereItsFirstBatchStarts() throws Exception {
    String topic = KafkaBroker.uniqueName("latest-split");
    broker.createTopic(topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    KafkaPipelineIT.produceTo(broker, topic, 1, 100, "old-", 0);   // before the start: latest skips them
    Config latest = ConfigFactory.parseString(
        "fencepost.pipelines.latest.auto-offset-reset = latest");
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "latest",
        latest.withFallback(ClusterNodes.node("latest", 0, List.of()))
            .withFallback(postgres.pekkoConfig()).withFallback(ConfigFactory.load()));
    ch.qos.logback.classic.Logger ownership = (ch.qos.logback.classic.Logger)
        LoggerFactory.getLogger("io.fencepost.kafka.Assignments");
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> seeks =
        new ch.qos.logback.core.read.ListAppender<>();
    seeks.start();
    ownership.addAppender(seeks);
    try {
      ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
      Pipeline pipeline = startBehindInterceptor(system, "latest", topic, KafkaBroker.uniqueName("latest"));
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
      while (seeks.list.stream().noneMatch(e -> e.getFormattedMessage().contains("seeking to stored offsets {" + tp))) {
        assertTrue(System.nanoTime() < deadline, "the partition was not seeked within a minute");
        Thread.sleep(20);
      }
      assertTrue(seeks.list.stream().anyMatch(e -> e.getFormattedMessage().contains(tp + "=100}")),
          "seeked to the log end at assignment");
      // The stream will not see offsets 100..119 the first time: its first batch starts at 120.
      int before = DroppingInterceptor.DROPS.get();
      DroppingInterceptor.arm(tp, 100, 120);
      KafkaPipelineIT.produceTo(broker, topic, 1, 100, "new-", 0);
      PartitionView view = awaitNext(pipeline, 200, Duration.ofMinutes(2));
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      assertEquals(20, DroppingInterceptor.DROPS.get() - before, "the interceptor hid offsets 100..119 once");
      assertEquals(100, view.appliedRecords(), "offsets 100..199, the hidden ones included");
      Map<Long, Integer> perOffset = KafkaPipelineIT.creditsPerOffset(system, view.partition());
      assertEquals(LongStream.range(100, 200).boxed().collect(Collectors.toSet()), perOffset.keySet());
      assertTrue(perOffset.values().stream().allMatch(n -> n == 1), "each offset credited once: " + perOffset);
    } finally {
      ownership.detachAppender(seeks);
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void aTopicDeletedAndRecreatedUnderARunningPipelineHaltsItsPartitionInsteadOfDroppingTheNewRecords()
      throws Exception {
    String topic = KafkaBroker.uniqueName("recreated");
    broker.createTopic(topic, 1);
    KafkaPipelineIT.produceTo(broker, topic, 1, 200, "before-", 0);
    ActorSystem<Void> system = KafkaPipelineIT.node("recreated", postgres);
    SimpleMeterRegistry registry =
        new SimpleMeterRegistry();
    Metrics.addRegistry(registry);
    try {
      String group = KafkaBroker.uniqueName("recreated");
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "recreated"),
          new KafkaPipelineIT.PaymentDeserializer(), PipelineSettings.create(system, "recreated")
              .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic)).withGroupId(group)).start();
      awaitNext(pipeline, 200, Duration.ofMinutes(1));
      try (Admin admin = broker.admin()) {
        admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
        while (admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic)) {
          assertTrue(System.nanoTime() < deadline, "topic not deleted within a minute");
          Thread.sleep(100);
        }
      }
      createTopicWhenDeletionDone(topic);
      KafkaPipelineIT.produceTo(broker, topic, 1, 50, "after-", 0);
      PartitionView view = awaitHalted(pipeline);
      // Seen by the stream going back (usually), or at a new assignment if the consumer saw the topic go.
      assertTrue(view.halted().startsWith("its log went back under a running consumer (offset 0 after 199)")
          || view.halted().startsWith("its stored next offset 200 is above the end"), view.halted());
      assertEquals(200, view.nextOffset().getAsLong(), "the stored offset did not move");
      assertEquals(200, view.appliedRecords(), "none of the new records was taken for a redelivery");
      double halts = registry.find("fencepost.partition.halts").tag("cause", "offset-above-log-end")
          .tag("topic", topic).counter().count();
      assertEquals(1.0, halts);
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);

      // Started again: the stored offset is found above the log end at assignment, before any seek.
      Pipeline again = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "recreated"),
          new KafkaPipelineIT.PaymentDeserializer(), PipelineSettings.create(system, "recreated")
              .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic)).withGroupId(group)).start();
      view = awaitHalted(again);
      assertTrue(view.halted().startsWith("its stored next offset 200 is above the end 50 of its log"), view.halted());
      assertEquals(2.0, registry.find("fencepost.partition.halts").tag("cause", "offset-above-log-end")
          .tag("topic", topic).counter().count());
      again.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      Set<String> credited = new HashSet<>();
      KafkaPipelineIT.credits(system, view.partition()).forEach(c -> credited.add(c.paymentId()));
      assertEquals(200, credited.size());
      assertTrue(credited.stream().noneMatch(id -> id.startsWith("after-")), "no new record applied: " + credited);

      // The operator resets the stored offset to the new log's start (the partition's node stopped).
      assertEquals(new OffsetReset.Result(view.partition(), 200, 0), OffsetReset.to(system, view.partition(), 0,
          PartitionActorSettings.create(system), Duration.ofSeconds(30)).toCompletableFuture().get(60, TimeUnit.SECONDS));
      Pipeline reset = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "recreated"),
          new KafkaPipelineIT.PaymentDeserializer(), PipelineSettings.create(system, "recreated")
              .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic)).withGroupId(group)).start();
      view = awaitNext(reset, 50, Duration.ofMinutes(1));
      reset.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      assertEquals("", view.halted());
      assertEquals(250, view.appliedRecords(), "the 50 records of the recreated topic, after the 200 before");
      Map<String, Integer> times = new HashMap<>();
      KafkaPipelineIT.credits(system, view.partition()).forEach(c -> times.merge(c.paymentId(), 1, Integer::sum));
      assertEquals(250, times.size());
      assertTrue(times.values().stream().allMatch(n -> n == 1), "each payment credited once");
    } finally {
      Metrics.removeRegistry(registry);
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  /** The pipeline's only partition once it is halted (within 2 minutes). */
  private static PartitionView awaitHalted(Pipeline pipeline) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    PartitionView view = null;
    while (view == null || view.halted().isEmpty()) {
      assertTrue(System.nanoTime() < deadline, "the partition did not halt within 2 minutes: " + view);
      Thread.sleep(100);
      List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      view = views.isEmpty() ? null : views.get(0);
    }
    return view;
  }

  /** Creates a topic again once the broker finished deleting its old incarnation. */
  private static void createTopicWhenDeletionDone(String topic) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
    while (true) {
      try {
        broker.createTopic(topic, 1);
        return;
      } catch (RuntimeException e) {
        assertTrue(System.nanoTime() < deadline, "could not create " + topic + " again: " + e);
        Thread.sleep(200);
      }
    }
  }

  /** A TestLedger pipeline whose consumer reads through {@link DroppingInterceptor}. */
  private static Pipeline startBehindInterceptor(ActorSystem<Void> system, String name, String topic, String group) {
    PipelineSettings settings = PipelineSettings.create(system, name)
        .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic)).withGroupId(group)
        .withBatch(500, Duration.ofMillis(20))
        .withKafkaClient("interceptor.classes", DroppingInterceptor.class.getName());
    return KafkaPipeline.create(system, ctx -> new TestLedger(ctx, name), new KafkaPipelineIT.PaymentDeserializer(),
        settings).start();
  }

  /** Offsets 0 until {@code records} each applied and credited exactly once, the hidden ones included. */
  private static void assertEachOffsetAppliedOnce(ActorSystem<?> system, PartitionView view, int records)
      throws Exception {
    assertEquals(records, view.appliedRecords(), "every record applied, the hidden ones included");
    Map<Long, Integer> perOffset = KafkaPipelineIT.creditsPerOffset(system, view.partition());
    assertEquals(records, perOffset.size());
    assertTrue(perOffset.values().stream().allMatch(n -> n == 1), "each offset credited once: " + perOffset);
  }

  private static PartitionView awaitNext(Pipeline pipeline, long next, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    PartitionView view = null;
    while (System.nanoTime() < deadline) {
      List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      if (views.size() == 1) {
        view = views.get(0);
        if (view.nextOffset().orElse(-1) >= next) {
          return view;
        }
      }
      Thread.sleep(100);
    }
    throw new AssertionError("next offset " + next + " not reached within " + timeout + ": " + view);
  }
}
