package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.fencepost.errors.RetriableException;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.DeadLetterReplay;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Bad input and failing handlers on a real broker and journal: undecodable values and fatal
 * handler failures are dead-lettered (topic and journal), retriable failures succeed on retry, and
 * every offset ends exactly one of applied or dead-lettered.
 */
@Tag("integration")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class BadInputIT {

  private static final int PARTITIONS = 4;
  private static final int RECORDS = 10_000;
  private static KafkaBroker broker;
  private static JournalDatabase postgres;
  /** Payment ids whose handler already failed once (retriable ones succeed on the second attempt). */
  static final Set<String> FAILED_ONCE = ConcurrentHashMap.newKeySet();
  /** When set, "fatal-*" payments are accepted: the bug behind them was fixed. */
  static volatile boolean fixed;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.create().start();
    postgres = Postgres.shared().createDatabase("bad_input_it");
    postgres.installSchema();
  }

  @AfterAll
  static void stop() {
    broker.close();
    Postgres.shared().dropDatabase(postgres);
  }

  /** Fails by payment id: "retry-*" once with a RetriableException, "fatal-*" always. */
  static final class Picky extends TestLedger {
    Picky(PartitionContext context) {
      super(context, "bad-input");
    }

    @Override
    protected Effects<Credited> onRecord(Ledger ledger, Inbound<Payment> in) {
      String id = in.value().paymentId();
      if (id.startsWith("fatal-") && !fixed) {
        throw new IllegalStateException("fatal failure for " + id);
      }
      if (id.startsWith("retry-") && FAILED_ONCE.add(id)) {
        throw new RetriableException("provider busy for " + id);
      }
      return super.onRecord(ledger, in);
    }
  }

  enum Kind { VALID, GARBAGE, RETRY, FATAL }

  static Kind kind(int i) {
    if (i % 100 == 7) {
      return Kind.GARBAGE;
    }
    if (i % 200 == 13) {
      return Kind.RETRY;
    }
    if (i % 200 == 113) {
      return Kind.FATAL;
    }
    return Kind.VALID;
  }

  @Test
  void badRecordsAreDeadLetteredAndEveryValidRecordIsAppliedOnce() throws Exception {
    String topic = KafkaBroker.uniqueName("bad");
    broker.createTopic(topic, PARTITIONS);
    Map<Integer, Map<Long, Kind>> expected = new HashMap<>();
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < RECORDS; i++) {
        int partition = i % PARTITIONS;
        Kind k = kind(i);
        String value = switch (k) {
          case GARBAGE -> "not a payment " + i;
          case RETRY -> "retry-" + i + ",m1,100";
          case FATAL -> "fatal-" + i + ",m1,100";
          case VALID -> "pay-" + i + ",m" + (i % 13) + "," + (i % 500);
        };
        var md = producer.send(new ProducerRecord<>(topic, partition, "k" + i, value)).get();
        expected.computeIfAbsent(partition, x -> new HashMap<>()).put(md.offset(), k);
      }
    }

    ActorSystem<Void> system = KafkaPipelineIT.node("badinput", postgres);
    try {
      PipelineSettings settings = PipelineSettings.create(system, "badinput")
          .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic))
          .withGroupId(KafkaBroker.uniqueName("bad-group")).withBatch(200, Duration.ofMillis(20))
          .withHandlerRetry(PipelineSettings.create(system, "badinput").handlerRetry().withInitial(Duration.ofMillis(20))
              .withMax(Duration.ofMillis(100)).withMultiplier(2.0).withMaxAttempts(3));
      Pipeline pipeline = KafkaPipeline.create(system, Picky::new, new KafkaPipelineIT.PaymentDeserializer(), settings)
          .start();
      long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
      List<PartitionView> views;
      while (true) {
        views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
        long done = views.stream().mapToLong(v -> v.nextOffset().orElse(0)).sum();
        if (done >= RECORDS || System.nanoTime() > deadline) {
          break;
        }
        Thread.sleep(250);
      }
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);

      long garbage = 0;
      long fatal = 0;
      long retry = 0;
      long valid = 0;
      for (Map<Long, Kind> m : expected.values()) {
        for (Kind k : m.values()) {
          switch (k) {
            case GARBAGE -> garbage++;
            case FATAL -> fatal++;
            case RETRY -> retry++;
            default -> valid++;
          }
        }
      }
      assertEquals(100, garbage);
      assertEquals(50, fatal);
      assertEquals(50, retry);

      // The journal: every offset exactly once, as applied or as dead-lettered, by kind.
      JdbcReadJournal journal = PersistenceQuery.get(system)
          .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
      long appliedTotal = 0;
      long deadTotal = 0;
      for (int part = 0; part < PARTITIONS; part++) {
        PartitionId id = new PartitionId(settings.groupId(), topic, part);
        Map<Long, Integer> credited = new HashMap<>();
        Map<Long, String> dead = new HashMap<>();
        journal.currentEventsByPersistenceId(id.persistenceId(), 0, Long.MAX_VALUE)
            .runForeach(env -> AppliedBatch.from(env.event()).ifPresent(b -> {
              for (Object e : b.events()) {
                credited.merge(((TestLedger.Credited) e).offset(), 1, Integer::sum);
              }
              for (AppliedBatch.DeadLetterView d : b.deadLetters()) {
                assertTrue(dead.put(d.offset(), d.errorClass()) == null, "offset " + d.offset() + " dead-lettered twice");
              }
            }), system).toCompletableFuture().get(60, TimeUnit.SECONDS);
        for (Map.Entry<Long, Kind> e : expected.get(part).entrySet()) {
          long offset = e.getKey();
          switch (e.getValue()) {
            case VALID, RETRY -> {
              assertEquals(1, credited.getOrDefault(offset, 0), "offset " + offset + " of partition " + part);
              assertTrue(!dead.containsKey(offset));
            }
            case GARBAGE -> {
              assertEquals(0, credited.getOrDefault(offset, 0));
              assertTrue(dead.containsKey(offset), "garbage at " + offset + " dead-lettered");
            }
            case FATAL -> {
              assertEquals(0, credited.getOrDefault(offset, 0));
              assertEquals(IllegalStateException.class.getName(), dead.get(offset), "fatal at " + offset);
            }
          }
        }
        appliedTotal += credited.size();
        deadTotal += dead.size();
      }
      assertEquals(valid + retry, appliedTotal);
      assertEquals(garbage + fatal, deadTotal);
      assertEquals(garbage + fatal, views.stream().mapToLong(PartitionView::deadLettered).sum());
      assertTrue(views.stream().mapToLong(PartitionView::retries).sum() >= retry + fatal,
          "retries visible in status: " + views);

      // The dead-letter topic: one record per dead letter, with the original's coordinates and error.
      List<ConsumerRecord<byte[], byte[]>> dlt = readAll(settings.deadLetter().topicFor(topic), (int) (garbage + fatal));
      assertEquals(garbage + fatal, dlt.size());
      Set<String> ids = new TreeSet<>();
      for (ConsumerRecord<byte[], byte[]> r : dlt) {
        int partition = Integer.parseInt(header(r, "fencepost.original.partition"));
        long offset = Long.parseLong(header(r, "fencepost.original.offset"));
        Kind k = expected.get(partition).get(offset);
        assertEquals(topic, header(r, "fencepost.original.topic"));
        assertEquals(partition, r.partition(), "dead letter kept its partition number");
        assertEquals("1", header(r, "fencepost.attempts"));
        assertTrue(k == Kind.GARBAGE || k == Kind.FATAL, "dead letter for a " + k + " record");
        if (k == Kind.FATAL) {
          assertEquals(IllegalStateException.class.getName(), header(r, "fencepost.error.class"));
          assertTrue(header(r, "fencepost.error.message").startsWith("fatal failure for fatal-"));
        }
        assertTrue(new String(r.value(), StandardCharsets.UTF_8).startsWith(k == Kind.GARBAGE ? "not a payment" : "fatal-"),
            "original value kept");
        assertTrue(Long.parseLong(header(r, "fencepost.original.timestamp")) > 0);
        ids.add(header(r, "fencepost.dead-letter-id"));
      }
      assertEquals(garbage + fatal, ids.size(), "dead-letter ids are distinct");
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void replayedDeadLettersKeepTheirHeadersAndASecondReplayRunIsDropped() throws Exception {
    String topic = KafkaBroker.uniqueName("replay");
    broker.createTopic(topic, 1);
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      producer.send(new ProducerRecord<>(topic, 0, "k1", "pay-r1,m1,10")).get();
      ProducerRecord<String, String> chained = new ProducerRecord<>(topic, 0, "k2", "fatal-r2,m1,20");
      chained.headers().add(OutboxRecord.ID_HEADER, "chain-7".getBytes(StandardCharsets.UTF_8));
      chained.headers().add("trace", "t-1".getBytes(StandardCharsets.UTF_8));
      producer.send(chained).get();
      producer.send(new ProducerRecord<>(topic, 0, "k3", "pay-r3,m1,30")).get();
    }
    ActorSystem<Void> system = KafkaPipelineIT.node("replay", postgres);
    try {
      PipelineSettings settings = PipelineSettings.create(system, "replay")
          .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic))
          .withGroupId(KafkaBroker.uniqueName("replay-group"));
      Pipeline pipeline = KafkaPipeline.create(system, Picky::new, new KafkaPipelineIT.PaymentDeserializer(), settings)
          .start();
      PartitionView v = awaitNextOffset(pipeline, 3);
      assertEquals(1, v.deadLettered());
      assertEquals(2, v.appliedRecords());

      fixed = true;
      String dlt = settings.deadLetter().topicFor(topic);
      assertEquals(new DeadLetterReplay.Result(1, 1, 0, 0),
          DeadLetterReplay.from(broker.bootstrapServers(), dlt).withKey("k2").dryRun().run());
      assertEquals(new DeadLetterReplay.Result(1, 1, 1, 0),
          DeadLetterReplay.from(broker.bootstrapServers(), dlt).withOffsets(0, 1, 1).run());
      v = awaitNextOffset(pipeline, 4);
      assertEquals(3, v.appliedRecords(), "the replayed record was applied");
      ConsumerRecord<byte[], byte[]> replayed = readAll(topic, 4).get(3);
      assertEquals("chain-7", header(replayed, OutboxRecord.ID_HEADER), "the business key of a chained pipeline");
      assertEquals("t-1", header(replayed, "trace"));
      assertEquals(v.partition().group() + "-" + topic + "-0-1", header(replayed, "fencepost.replay-of"));
      assertEquals(v.partition().group() + "-" + topic + "-0-1", header(replayed, "fencepost.origin-id"));
      assertEquals(null, header(replayed, "fencepost.error.class"), "no dead-letter headers");

      // An operator runs the replay again by mistake: the partition's journal shows it was replayed.
      assertEquals(1, DeadLetterReplay.from(broker.bootstrapServers(), dlt).withKey("k2").run()
          .replayed());
      v = awaitNextOffset(pipeline, 5);
      assertEquals(3, v.appliedRecords());
      assertEquals(0, v.droppedByKey());
      assertEquals(1, v.droppedRedelivery(), "the second replay is dropped as a repeat");
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      fixed = false;
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void withPerKeyOrderingLaterRecordsOfAFailedKeyAreParkedUntilItIsReplayed() throws Exception {
    String topic = KafkaBroker.uniqueName("parked");
    broker.createTopic(topic, 1);
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    String[][] records = {{"k1", "pay-a"}, {"k2", "fatal-b"}, {"k1", "pay-c"}, {"k2", "pay-d"}, {"k2", "pay-e"},
        {"k3", "pay-f"}};
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (String[] r : records) {
        producer.send(new ProducerRecord<>(topic, 0, r[0], r[1] + ",m1,10")).get();
      }
    }
    ActorSystem<Void> system = KafkaPipelineIT.node("parking", postgres);
    try {
      PipelineSettings base = PipelineSettings.create(system, "parking")
          .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic))
          .withGroupId(KafkaBroker.uniqueName("parking-group"));
      PipelineSettings settings = base.withPartitionActor(base.partitionActor().withPerKeyOrdering(true));
      Pipeline pipeline = KafkaPipeline.create(system, Picky::new, new KafkaPipelineIT.PaymentDeserializer(), settings)
          .start();
      PartitionView v = awaitNextOffset(pipeline, 6);
      assertEquals(3, v.appliedRecords(), "k1 and k3 proceed: pay-a, pay-c, pay-f");
      assertEquals(3, v.deadLettered(), "fatal-b failed, pay-d and pay-e parked behind it");
      List<ConsumerRecord<byte[], byte[]>> dlt = readAll(settings.deadLetter().topicFor(topic), 3);
      assertEquals(List.of("false", "true", "true"), dlt.stream().map(r -> header(r, "fencepost.parked")).toList());
      assertEquals(List.of("1", "3", "4"), dlt.stream().map(r -> header(r, "fencepost.original.offset")).toList());

      fixed = true;
      assertEquals(3, DeadLetterReplay.from(broker.bootstrapServers(), settings.deadLetter().topicFor(topic))
          .withKey("k2").run().replayed());
      v = awaitNextOffset(pipeline, 9);
      assertEquals(6, v.appliedRecords(), "the failed record and then the parked ones, in order");
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);

      JdbcReadJournal journal = PersistenceQuery.get(system)
          .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
      List<String> applied = new ArrayList<>();
      journal.currentEventsByPersistenceId(new PartitionId(settings.groupId(), topic, 0).persistenceId(), 0, Long.MAX_VALUE)
          .runForeach(env -> AppliedBatch.from(env.event()).ifPresent(b -> b.events()
              .forEach(e -> applied.add(((TestLedger.Credited) e).paymentId()))), system)
          .toCompletableFuture().get(60, TimeUnit.SECONDS);
      assertEquals(List.of("pay-a", "pay-c", "pay-f", "fatal-b", "pay-d", "pay-e"), applied);
    } finally {
      fixed = false;
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private static PartitionView awaitNextOffset(Pipeline pipeline, long next) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (true) {
      List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      if (!views.isEmpty() && views.get(0).nextOffset().orElse(0) >= next) {
        return views.get(0);
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("next offset " + next + " not reached: " + views);
      }
      Thread.sleep(200);
    }
  }

  /**
   * A 1.5 MiB record that cannot be decoded, on a topic that accepts 2 MiB: it is dead-lettered whole
   * (the dead-letter topic and producer sized for it at start) and the payments after it are applied.
   */
  @Test
  void aDeadLetterLargerThanKafkasDefaultLimitIsPublishedWholeAndThePartitionGoesOn() throws Exception {
    String topic = KafkaBroker.uniqueName("large");
    broker.createTopic(topic, 1, Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, Integer.toString(2 * 1024 * 1024)));
    ConsumerRecord<byte[], byte[]> letter = oversizedThenPayments(topic, "large",
        new ProducerRecord<>(topic, 0, "big", new byte[LARGE]));
    assertEquals(LARGE, letter.value().length, "the whole value");
    assertNull(header(letter, "fencepost.value-omitted-bytes"));
  }

  /**
   * The same record when the dead-letter topic was created by hand with Kafka's default limit: the
   * dead letter is published without its value (the header says its size) and the partition goes on.
   */
  @Test
  void aDeadLetterLargerThanItsTopicAcceptsIsPublishedWithoutItsValueAndThePartitionGoesOn() throws Exception {
    String topic = KafkaBroker.uniqueName("large-fixed-dlt");
    broker.createTopic(topic, 1, Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, Integer.toString(2 * 1024 * 1024)));
    broker.createTopic(topic + ".dlt", 1);
    ConsumerRecord<byte[], byte[]> letter = oversizedThenPayments(topic, "large-fixed-dlt",
        new ProducerRecord<>(topic, 0, "big", new byte[LARGE]));
    assertNull(letter.value(), "the value is left out");
    assertEquals(Integer.toString(LARGE), header(letter, "fencepost.value-omitted-bytes"));
    assertEquals("big", new String(letter.key(), StandardCharsets.UTF_8), "the key is kept");
    assertNull(header(letter, "fencepost.key-omitted-bytes"));
  }

  /**
   * A small undecodable value whose key and one header are each larger than the hand-made dead-letter
   * topic accepts: without its value it is still too large, so it is published with Fencepost's
   * headers only (their sizes said), and the partition goes on.
   */
  @Test
  void aDeadLetterWhoseKeyAndHeadersAloneAreTooLargeIsPublishedWithFencepostsHeadersOnly() throws Exception {
    String topic = KafkaBroker.uniqueName("large-key");
    broker.createTopic(topic, 1, Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, Integer.toString(4 * 1024 * 1024)));
    broker.createTopic(topic + ".dlt", 1);
    ProducerRecord<String, byte[]> big = new ProducerRecord<>(topic, 0, "k".repeat(LARGE),
        "not a payment".getBytes(StandardCharsets.UTF_8));
    big.headers().add("trace", new byte[LARGE]);
    ConsumerRecord<byte[], byte[]> letter = oversizedThenPayments(topic, "large-key", big);
    assertNull(letter.value(), "the value is left out");
    assertNull(letter.key(), "the key is left out");
    assertNull(letter.headers().lastHeader("trace"), "the record's own headers are left out");
    assertEquals("13", header(letter, "fencepost.value-omitted-bytes"));
    assertEquals(Integer.toString(LARGE), header(letter, "fencepost.key-omitted-bytes"));
    assertEquals(Integer.toString("trace".length() + LARGE), header(letter, "fencepost.headers-omitted-bytes"));
    assertEquals(topic, header(letter, "fencepost.original.topic"));
  }

  /**
   * A dead-letter topic made by hand with cleanup.policy=compact would keep only the newest dead letter
   * of each key (and take a value-less one for a tombstone): the pipeline refuses to start, naming it.
   */
  @Test
  void aCompactedDeadLetterTopicIsRefusedAtStart() throws Exception {
    String topic = KafkaBroker.uniqueName("compacted-dlt");
    broker.createTopic(topic, 1);
    broker.createTopic(topic + ".dlt", 1, Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
    ActorSystem<Void> system = KafkaPipelineIT.node("compacted", postgres);
    try {
      PipelineSettings settings = PipelineSettings.create(system, "compacted")
          .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic))
          .withGroupId(KafkaBroker.uniqueName("compacted-group"));
      io.fencepost.errors.SettingsException e = org.junit.jupiter.api.Assertions.assertThrows(
          io.fencepost.errors.SettingsException.class, () -> KafkaPipeline.create(system, Picky::new,
              new KafkaPipelineIT.PaymentDeserializer(), settings).start());
      assertEquals("fencepost.pipelines.compacted.dead-letter.topic-suffix", e.key());
      assertTrue(e.getMessage().contains("names dead-letter topic [" + topic + ".dlt], which has cleanup.policy=compact"),
          e.getMessage());
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private static final int LARGE = 1_572_864;

  /** Produces the large record then 1,000 payments; returns the one dead letter after all were handled. */
  private static ConsumerRecord<byte[], byte[]> oversizedThenPayments(String topic, String name,
      ProducerRecord<String, byte[]> oversized) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(5 * 1024 * 1024));
    try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer())) {
      producer.send(oversized).get();
      for (int i = 0; i < 1_000; i++) {
        producer.send(new ProducerRecord<>(topic, 0, "k" + i, ("pay-" + i + ",m1,10").getBytes(StandardCharsets.UTF_8)));
      }
      producer.flush();
    }
    ActorSystem<Void> system = KafkaPipelineIT.node(name, postgres);
    try {
      PipelineSettings settings = PipelineSettings.create(system, name)
          .withBootstrapServers(broker.bootstrapServers()).withTopics(List.of(topic))
          .withGroupId(KafkaBroker.uniqueName(name + "-group"));
      Pipeline pipeline = KafkaPipeline.create(system, Picky::new, new KafkaPipelineIT.PaymentDeserializer(), settings)
          .start();
      PartitionView v = awaitNextOffset(pipeline, 1_001);
      assertEquals(1, v.deadLettered(), "the large record");
      assertEquals(1_000, v.appliedRecords(), "every payment after it");
      List<ConsumerRecord<byte[], byte[]>> dlt = readAll(settings.deadLetter().topicFor(topic), 1);
      assertEquals(1, dlt.size());
      assertEquals("0", header(dlt.get(0), "fencepost.original.offset"));
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      return dlt.get(0);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
    Header h = r.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  private static List<ConsumerRecord<byte[], byte[]>> readAll(String topic, int atLeast) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      c.partitionsFor(topic).forEach(pi -> tps.add(new TopicPartition(topic, pi.partition())));
      c.assign(tps);
      c.seekToBeginning(tps);
      Map<TopicPartition, Long> end = c.endOffsets(tps);
      Set<TopicPartition> open = new HashSet<>(tps);
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!open.isEmpty() && System.nanoTime() < deadline) {
        c.poll(Duration.ofMillis(200)).forEach(out::add);
        open.removeIf(tp -> c.position(tp) >= end.get(tp));
      }
    }
    return out;
  }
}
