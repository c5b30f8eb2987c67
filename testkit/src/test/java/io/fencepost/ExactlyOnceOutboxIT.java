package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.fencepost.errors.SettingsException;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.OutboxSettings;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * The exactly-once outbox relay ({@code outbox.delivery = exactly-once}) on a real broker and a real
 * PostgreSQL: a relay that died with its transaction open leaves nothing a {@code read_committed}
 * consumer sees, the next relay publishes from the position committed with the records (not the one
 * in the journal database, which may lag or be lost), and a relay a later one fenced stops quietly.
 */
@Tag("integration")
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class ExactlyOnceOutboxIT {

  private static KafkaBroker broker;
  private static JournalDatabase postgres;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.create().start();
    postgres = Postgres.shared().createDatabase("exactly_once_outbox_it");
    postgres.installSchema();
  }

  @AfterAll
  static void stop() {
    broker.close();
    Postgres.shared().dropDatabase(postgres);
  }

  private static PipelineSettings settings(ActorSystem<?> system, String name, String in, String group,
      String positions) {
    PipelineSettings s = PipelineSettings.create(system, name).withBootstrapServers(broker.bootstrapServers())
        .withTopics(List.of(in)).withBatch(50, Duration.ofMillis(20)).withGroupId(group);
    return s.withOutbox(s.outbox().withEnabled(true).withDelivery(OutboxSettings.Delivery.EXACTLY_ONCE)
        .withPositionTopic(positions).withStorePositionEvery(Duration.ofHours(1)));
  }

  /**
   * A relay that died mid-transaction (its records and position sent, never committed) is fenced by
   * the next relay of its partition, whose start aborts that transaction; the records it had sent are
   * never seen by a read_committed consumer. After a restart whose journal database lost the relay's
   * stored position, the relay goes on from the position it committed in Kafka: every record once.
   */
  @Test
  void anOpenTransactionOfADeadRelayIsAbortedAndARestartGoesOnFromTheCommittedPosition() throws Exception {
    String in = KafkaBroker.uniqueName("eos");
    String out = in + "-out";
    String positions = in + "-positions";
    String group = KafkaBroker.uniqueName("eos-group");
    broker.createTopic(in, 2);
    broker.createTopic(out, 2);
    PartitionId p0 = new PartitionId(group, in, 0);
    KafkaProducer<byte[], byte[]> dead = deadRelay(p0, out, 5);
    for (int run = 0; run < 2; run++) {
      ActorSystem<Void> system = KafkaPipelineIT.node("eos" + run, postgres);
      try {
        Pipeline pipeline = KafkaPipeline.create(system, KafkaPipelineIT.Forwarder::new,
            new KafkaPipelineIT.PaymentDeserializer(), settings(system, "eos", in, group, positions)).start();
        KafkaPipelineIT.produceTo(broker, in, 2, 400, "run" + run + "-");
        int expected = 400 * (run + 1);
        Await.until("every record committed once", Duration.ofMinutes(2), () -> committed(out).size() == expected);
        Map<String, Integer> ids = committed(out);
        assertEquals(expected, ids.size(), "distinct outbox ids");
        assertEquals(expected, ids.values().stream().mapToInt(Integer::intValue).sum(),
            "records seen by read_committed: each once, none of the dead relay's");
        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
      if (run == 0) {
        assertThrows(ProducerFencedException.class, dead::commitTransaction, "the dead relay was fenced");
        dead.close(Duration.ZERO);
        // The journal database loses the relays' stored positions (a crash before the store, or a
        // restore): only the position committed with the records says where to go on.
        try (Connection c = postgres.connect(); Statement st = c.createStatement()) {
          assertTrue(st.executeUpdate("DELETE FROM durable_state WHERE persistence_id LIKE 'fencepost-outbox|%"
              + group + "%'") > 0, "relay positions were stored");
        }
      }
    }
  }

  /**
   * A relay fenced by a later relay of its partition (which a paused node meets once it resumes) says
   * so at INFO and nothing of Fencepost's at ERROR; while its node still owns the partition (here no
   * rebalance tells it otherwise: as after a transaction the broker aborted for its age) it starts
   * again after a pause, from the position committed, and publishes every record once.
   */
  @Test
  void aRelayALaterOneFencedSaysSoAndGoesOnFromTheCommittedPositionWhileItsNodeOwnsThePartition()
      throws Exception {
    String in = KafkaBroker.uniqueName("zombie");
    String out = in + "-out";
    String positions = in + "-positions";
    String group = KafkaBroker.uniqueName("zombie-group");
    broker.createTopic(in, 1);
    broker.createTopic(out, 1);
    Logger root = (Logger) LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME);
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    ActorSystem<Void> system = KafkaPipelineIT.node("zombie", postgres);
    try {
      KafkaPipeline.create(system, KafkaPipelineIT.Forwarder::new, new KafkaPipelineIT.PaymentDeserializer(),
          settings(system, "zombie", in, group, positions)).start();
      KafkaPipelineIT.produceTo(broker, in, 1, 200, "before-");
      Await.until("the first records committed", Duration.ofMinutes(2), () -> committed(out).size() == 200);
      root.addAppender(seen);
      // A later relay of partition 0 starts elsewhere: it fences this node's, and publishes nothing.
      try (KafkaProducer<byte[], byte[]> later = transactional("fencepost-outbox|" + new PartitionId(group, in, 0)
          .qualifiedName(), Duration.ofMinutes(1))) {
        later.initTransactions();
        KafkaPipelineIT.produceTo(broker, in, 1, 100, "after-");
        Await.until("the fenced relay says so", Duration.ofMinutes(1), () -> seen.list.stream().anyMatch(e ->
            e.getLevel() == Level.INFO && e.getFormattedMessage().contains("outbox relay fenced by a later relay")));
        Await.until("the relay started again and published the rest", Duration.ofMinutes(1),
            () -> committed(out).size() == 300);
      }
      // (kafka-clients' own Sender logs one ERROR "Aborting producer batches due to fatal error" on fencing.)
      assertEquals(List.of(), seen.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.ERROR)
          && e.getLoggerName().startsWith("io.fencepost")).map(ILoggingEvent::getFormattedMessage).toList(),
          "no ERROR of Fencepost's for a fenced relay");
      Map<String, Integer> ids = committed(out);
      assertEquals(300, ids.size(), "every record");
      assertEquals(300, ids.values().stream().mapToInt(Integer::intValue).sum(), "nothing twice");
    } finally {
      root.detachAppender(seen);
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  /**
   * A busy partition writes a batch every few milliseconds; its relay commits at most one transaction
   * per {@code transaction-interval} (each costs the brokers a marker on every partition it wrote),
   * and every record still arrives once.
   */
  @Test
  void aRelayCommitsAtMostOneTransactionPerTransactionInterval() throws Exception {
    io.micrometer.core.instrument.simple.SimpleMeterRegistry meters =
        new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
    long start = System.nanoTime();
    forwardOnePartition("paced", meters, o -> o.withTransactionInterval(Duration.ofSeconds(2)), false, in -> {
      for (int i = 0; i < 40; i++) {   // a batch of 50 every 100 ms or so: 4 s of steady writes
        KafkaPipelineIT.produceTo(broker, in, 1, 50, "paced-" + i + "-");
        Thread.sleep(100);
      }
    }, Duration.ofMinutes(2));
    double seconds = (System.nanoTime() - start) / 1e9;
    long transactions = (long) meters.find("fencepost.outbox.relay.transactions").counters().stream()
        .mapToDouble(io.micrometer.core.instrument.Counter::count).sum();
    assertTrue(transactions >= 1 && transactions <= Math.ceil(seconds / 2) + 1,
        transactions + " transactions in " + seconds + " s");
  }

  /**
   * Pacing caps how often a relay commits, not how much it publishes: a backlog (here 40 journal
   * entries, 2 per round, with a transaction-interval of 20 s) goes out in back-to-back full rounds,
   * not one round per interval (which would take over 6 minutes). At most two paced waits: a round
   * that found the relay caught up, then the rest in full rounds.
   */
  @Test
  void aRelayWithABacklogIsNotSlowedByItsTransactionInterval() throws Exception {
    forwardOnePartition("backlog", new io.micrometer.core.instrument.simple.SimpleMeterRegistry(),
        o -> o.withTransactionInterval(Duration.ofSeconds(20)).withMaxEntriesPerRound(2), true, in -> { },
        Duration.ofSeconds(90));
  }

  /** Feeds a topic of one partition. */
  private interface Feed {
    void into(String topic) throws Exception;
  }

  /**
   * A one-partition pipeline forwarding each record through the exactly-once outbox with {@code outbox}
   * applied to its settings: 2,000 records, produced before the pipeline starts ({@code backlog}) or
   * by {@code feed} once it runs, must each be committed once within {@code within}.
   */
  private static void forwardOnePartition(String name, io.micrometer.core.instrument.MeterRegistry meters,
      java.util.function.UnaryOperator<OutboxSettings> outbox, boolean backlog, Feed feed, Duration within)
      throws Exception {
    String in = KafkaBroker.uniqueName(name);
    String out = in + "-out";
    String group = KafkaBroker.uniqueName(name + "-group");
    broker.createTopic(in, 1);
    broker.createTopic(out, 1);
    if (backlog) {
      KafkaPipelineIT.produceTo(broker, in, 1, 2_000, name + "-");   // 40 batches of 50 once consumed
    }
    ActorSystem<Void> system = KafkaPipelineIT.node(name, postgres);
    FencepostMeters.get(system).use(meters);
    try {
      PipelineSettings s = settings(system, name, in, group, in + "-positions");
      KafkaPipeline.create(system, KafkaPipelineIT.Forwarder::new, new KafkaPipelineIT.PaymentDeserializer(),
          s.withOutbox(outbox.apply(s.outbox()))).start();
      feed.into(in);
      Await.until("every record committed", within, () -> committed(out).size() == 2_000);
      assertEquals(2_000, committed(out).values().stream().mapToInt(Integer::intValue).sum(), "each record once");
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  /**
   * Relays share the position topic's partitions: a transaction another relay left open there (a
   * killed node's, until its partition's next relay starts) holds the partition's last stable offset
   * back. A relay that starts then must still find the position it committed after that transaction
   * began, not an older one (it waits for the open transaction to end).
   */
  @Test
  void aRelayFindsItsPositionBehindAnotherRelaysOpenTransaction() throws Exception {
    String in = KafkaBroker.uniqueName("shared");
    String out = in + "-out";
    String positions = in + "-positions";
    String group = KafkaBroker.uniqueName("shared-group");
    broker.createTopic(in, 1);
    broker.createTopic(out, 1);
    broker.createTopic(positions, 25, Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
    // The position partition of the relay's key (Kafka's default partitioner over the first 25).
    int shared = org.apache.kafka.common.utils.Utils.toPositive(org.apache.kafka.common.utils.Utils.murmur2(
        new PartitionId(group, in, 0).persistenceId().getBytes(StandardCharsets.UTF_8))) % 25;
    KafkaProducer<byte[], byte[]> other = null;
    try {
      for (int run = 0; run < 2; run++) {
        int r = run;
        ActorSystem<Void> system = KafkaPipelineIT.node("shared" + run, postgres);
        try {
          Pipeline pipeline = KafkaPipeline.create(system, KafkaPipelineIT.Forwarder::new,
              new KafkaPipelineIT.PaymentDeserializer(), settings(system, "shared", in, group, positions)).start();
          KafkaPipelineIT.produceTo(broker, in, 1, 200, "run" + run + "a-");
          Await.until("the first records committed", Duration.ofMinutes(2), () -> committed(out).size() == 200 + 400 * r);
          if (run == 0) {
            // Another relay's transaction opens on the relay's position partition and stays open (20 s).
            other = transactional("fencepost-outbox|other-group|other|0", Duration.ofSeconds(20));
            other.initTransactions();
            other.beginTransaction();
            other.send(new ProducerRecord<>(positions, shared, "fencepost|other-group|other|0".getBytes(StandardCharsets.UTF_8),
                "7".getBytes(StandardCharsets.UTF_8))).get(30, TimeUnit.SECONDS);
          }
          KafkaPipelineIT.produceTo(broker, in, 1, 200, "run" + run + "b-");
          Await.until("the rest committed", Duration.ofMinutes(2), () -> committed(out).size() == 400 * (r + 1));
          pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
        } finally {
          system.terminate();
          system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
        }
        try (Connection c = postgres.connect(); Statement st = c.createStatement()) {
          st.executeUpdate("DELETE FROM durable_state WHERE persistence_id LIKE 'fencepost-outbox|%" + group + "%'");
        }
      }
      Map<String, Integer> ids = committed(out);
      assertEquals(800, ids.size(), "distinct outbox ids");
      assertEquals(800, ids.values().stream().mapToInt(Integer::intValue).sum(), "each once");
    } finally {
      if (other != null) {
        other.close(Duration.ZERO);
      }
    }
  }

  /** transaction.timeout.ms no longer than delivery.timeout.ms is refused, naming both values. */
  @Test
  void aTransactionTimeoutShorterThanARoundIsRefused() {
    ActorSystem<Void> system = KafkaPipelineIT.node("eos-timeout", postgres);
    try {
      PipelineSettings s = PipelineSettings.create(system, "eos-timeout");
      SettingsException e = assertThrows(SettingsException.class, () -> s.withOutbox(s.outbox()
          .withDelivery(OutboxSettings.Delivery.EXACTLY_ONCE)
          .withProducer(Map.of("delivery.timeout.ms", "30000", "transaction.timeout.ms", "20000"))));
      assertEquals("fencepost.pipelines.eos-timeout.outbox.producer-kafka-clients.transaction.timeout.ms", e.key());
      assertTrue(e.getMessage().contains("20000") && e.getMessage().contains("(30000 + 60000 ms)"),
          e.getMessage());
    } finally {
      system.terminate();
    }
  }

  /** The position topic must be compacted: a deleting one is refused at start, naming the setting and the fix. */
  @Test
  void aPositionTopicThatDeletesIsRefusedAtStart() {
    String in = KafkaBroker.uniqueName("eos-delete");
    String positions = in + "-positions";
    broker.createTopic(in, 1);
    broker.createTopic(positions, 1, Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_DELETE));
    ActorSystem<Void> system = KafkaPipelineIT.node("eos-delete", postgres);
    try {
      SettingsException e = assertThrows(SettingsException.class, () -> KafkaPipeline.create(system,
          KafkaPipelineIT.Forwarder::new, new KafkaPipelineIT.PaymentDeserializer(),
          settings(system, "eos-delete", in, KafkaBroker.uniqueName("g"), positions)).start());
      assertEquals("fencepost.pipelines.eos-delete.outbox.position-topic", e.key());
      assertTrue(e.getMessage().contains("has cleanup.policy=delete"), e.getMessage());
    } finally {
      system.terminate();
    }
  }

  /** Relays key their positions over 25 partitions: a position topic with fewer is refused at start, naming the fix. */
  @Test
  void aPositionTopicWithTooFewPartitionsIsRefusedAtStart() {
    String in = KafkaBroker.uniqueName("eos-narrow");
    String positions = in + "-positions";
    broker.createTopic(in, 1);
    broker.createTopic(positions, 3, Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
    ActorSystem<Void> system = KafkaPipelineIT.node("eos-narrow", postgres);
    try {
      SettingsException e = assertThrows(SettingsException.class, () -> KafkaPipeline.create(system,
          KafkaPipelineIT.Forwarder::new, new KafkaPipelineIT.PaymentDeserializer(),
          settings(system, "eos-narrow", in, KafkaBroker.uniqueName("g"), positions)).start());
      assertEquals("fencepost.pipelines.eos-narrow.outbox.position-topic", e.key());
      assertTrue(e.getMessage().contains("has 3 partition(s): it needs at least 25"), e.getMessage());
      assertTrue(e.getMessage().contains("kafka-topics --alter --topic " + positions + " --partitions 25"),
          e.getMessage());
    } finally {
      system.terminate();
    }
  }

  private static KafkaProducer<byte[], byte[]> transactional(String transactionalId, Duration timeout) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Long.toString(timeout.toMillis()));
    return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
  }

  /**
   * A relay of {@code partition} that sent {@code n} records into a transaction and died before
   * committing; its transaction would stay open for 10 minutes: only the next relay's start ends it.
   */
  private static KafkaProducer<byte[], byte[]> deadRelay(PartitionId partition, String out, int n) throws Exception {
    KafkaProducer<byte[], byte[]> producer = transactional("fencepost-outbox|" + partition.qualifiedName(),
        Duration.ofMinutes(10));
    producer.initTransactions();
    producer.beginTransaction();
    for (int i = 0; i < n; i++) {
      ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(out, 0, null, ("copy-" + i).getBytes(StandardCharsets.UTF_8));
      r.headers().add(OutboxRecord.ID_HEADER, ("dead-relay-copy-" + i).getBytes(StandardCharsets.UTF_8));
      producer.send(r).get(30, TimeUnit.SECONDS);
    }
    return producer;
  }

  /** Each outbox id a read_committed consumer sees in {@code topic}, read to its last stable offset, with its count. */
  static Map<String, Integer> committed(String topic) {
    Map<String, Integer> ids = new HashMap<>();
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
        new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      consumer.partitionsFor(topic, Duration.ofSeconds(10)).forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      Map<TopicPartition, Long> end = consumer.endOffsets(tps);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (tps.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp)) && System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          ids.merge(new String(r.headers().lastHeader(OutboxRecord.ID_HEADER).value(), StandardCharsets.UTF_8), 1,
              Integer::sum);
        }
      }
    }
    return ids;
  }
}
