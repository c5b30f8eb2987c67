package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PipelineSettings;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A pipeline on two journal databases: each partition's journal and its outbox relay's position live
 * in the partition's own database, the relays resume from their stored positions after a restart
 * (each record published once), and a pipeline whose configuration would read a database as another
 * place than it is refuses to start.
 */
@Tag("integration")
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class JournalDatabasesPipelineIT {

  private static KafkaBroker broker;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.create().start();
  }

  @AfterAll
  static void stop() {
    broker.close();
  }

  private static JournalDatabase fresh(String name) {
    JournalDatabase db = JournalDatabase.h2Memory(KafkaBroker.uniqueName(name));
    db.installSchema();
    return db;
  }

  private static ActorSystem<Void> node(String name, Config journal) {
    Config config = ClusterNodes.node(name, 0, List.of()).withFallback(journal).withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), name, config);
    ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
    return system;
  }

  private static PipelineSettings settings(ActorSystem<?> system, String topic, String group) {
    return PipelineSettings.create(system, "spread").withBootstrapServers(broker.bootstrapServers())
        .withTopics(List.of(topic)).withBatch(500, Duration.ofMillis(20)).withGroupId(group);
  }

  @Test
  void eachPartitionsJournalAndRelayPositionLiveInItsDatabaseAndEveryRecordIsPublishedOnce() throws Exception {
    JournalDatabases dbs = JournalDatabases.of("spread", List.of(fresh("spread-a"), fresh("spread-b")));
    String in = KafkaBroker.uniqueName("spread");
    String out = in + "-out";
    broker.createTopic(in, 4);
    broker.createTopic(out, 4);
    String group = KafkaBroker.uniqueName("spread-group");
    for (int run = 0; run < 2; run++) {
      ActorSystem<Void> system = node("spread" + run, dbs.pekkoConfig());
      try {
        PipelineSettings s = settings(system, in, group);
        s = s.withOutbox(s.outbox().withEnabled(true).withStorePositionEvery(Duration.ofMillis(100)));
        KafkaPipeline.create(system, KafkaPipelineIT.Forwarder::new, new KafkaPipelineIT.PaymentDeserializer(), s)
            .start();
        KafkaPipelineIT.produceTo(broker, in, 4, 400, "run" + run + "-");
        KafkaPipelineIT.awaitStableEnd(broker, out, 400L * (run + 1), Duration.ofSeconds(90));
      } finally {
        system.terminate();   // graceful: the relays store their positions
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    }
    assertEquals(800, publishedOnce(out), "distinct payments published, each once");
    for (int p = 0; p < 4; p++) {
      PartitionId id = new PartitionId(group, in, p);
      int home = dbs.indexOf(id);
      for (int i = 0; i < 2; i++) {
        JournalDatabase db = dbs.databases().get(i);
        assertEquals(i == home, rows(db, "event_journal", id.persistenceId()) > 0, id + " journal in database " + i);
        assertEquals(i == home ? 1 : 0, rows(db, "durable_state", OutboxRecord.relayPersistenceId(id.persistenceId())),
            id + " relay position in database " + i);
      }
    }
  }

  @Test
  void aPipelineThatWouldReadADatabaseAsAnotherPlaceRefusesToStart() throws Exception {
    JournalDatabase a = fresh("place-a");
    JournalDatabases dbs = JournalDatabases.of("place", List.of(a, fresh("place-b")));
    String topic = KafkaBroker.uniqueName("place");
    broker.createTopic(topic, 2);
    Config counted = ConfigFactory.parseString("fencepost.partition-actor.journal-databases = 1")
        .withFallback(dbs.pekkoConfig());
    assertRefused(counted, "[spread] refused to start: the journal [fencepost-journal-0] the pipeline would use as "
        + "database 0 of 1 (partition-actor.journal-databases) says it is database 0 of 2 of deployment [place]. "
        + "Partitions would recover from a database without their histories.", topic);
    assertRefused(a.pekkoConfig(), "[spread] refused to start: the journal [jdbc-journal] the pipeline would use as "
        + "database 0 of 1 (partition-actor.journal-databases) says it is database 0 of 2 of deployment [place].", topic);
  }

  /**
   * Each database's identity is read through its journal plugin; a layer that points another plugin
   * of that database (snapshots, the relay's read journal or durable state) at another database's
   * pool is refused too, naming the plugin and both databases.
   */
  @Test
  void aPipelineWhosePluginsOfOneDatabaseReachDifferentDatabasesRefusesToStart() throws Exception {
    JournalDatabase a = fresh("mixed-a");
    JournalDatabase b = fresh("mixed-b");
    JournalDatabases dbs = JournalDatabases.of("mixed", List.of(a, b));
    String topic = KafkaBroker.uniqueName("mixed");
    broker.createTopic(topic, 2);
    Config snapshots = ConfigFactory.parseString("fencepost-snapshot-store-1.use-shared-db = \"fencepost-db-0\"")
        .withFallback(dbs.pekkoConfig());
    assertRefused(snapshots, "[spread] refused to start: the plugins of journal database 1 of 2 reach different "
        + "databases: the snapshot plugin [fencepost-snapshot-store-1] reaches " + a.jdbcUrl() + ", while "
        + "[fencepost-journal-1] reaches " + b.jdbcUrl() + ".", topic);
    Config relay = ConfigFactory.parseString("fencepost-durable-state-store-0.use-shared-db = \"fencepost-db-1\"\n"
        + "fencepost.pipeline.outbox.enabled = on").withFallback(dbs.pekkoConfig());
    assertRefused(relay, "[spread] refused to start: the plugins of journal database 0 of 2 reach different "
        + "databases: the outbox durable-state plugin [fencepost-durable-state-store-0] reaches " + b.jdbcUrl()
        + ", while [fencepost-journal-0] reaches " + a.jdbcUrl() + ".", topic);
    // A plugin whose database the configuration cannot tell (its own slick block naming a JNDI data source).
    Config jndi = ConfigFactory.parseString("fencepost-snapshot-store-1.use-shared-db = \"\"\n"
        + "fencepost-snapshot-store-1.slick.jndiName = \"java:comp/env/jdbc/ledger\"").withFallback(dbs.pekkoConfig());
    assertRefused(jndi, "[spread] refused to start: the snapshot plugin [fencepost-snapshot-store-1] of journal "
        + "database 1 of 2 names no database this can check", topic);
    // A pool that names a JNDI data source beside its url: the data source wins, so the url tells nothing.
    Config jndiPool = ConfigFactory.parseString("pekko-persistence-jdbc.shared-databases.fencepost-db-1.jndiName = "
        + "\"java:comp/env/jdbc/ledger\"").withFallback(dbs.pekkoConfig());
    assertRefused(jndiPool, "[spread] refused to start: the journal plugin [fencepost-journal-1] of journal "
        + "database 1 of 2 names no database this can check", topic);
    // A layer above the verified list points a pool at another database (a copy, say): refused by URL.
    JournalDatabase other = fresh("mixed-other");
    Config elsewhere = ConfigFactory.parseString("pekko-persistence-jdbc.shared-databases.fencepost-db-1.db.url = \""
        + other.jdbcUrl() + "\"").withFallback(dbs.pekkoConfig());
    assertRefused(elsewhere, "[spread] refused to start: the journal plugin [fencepost-journal-1] of journal database "
        + "1 of 2 reaches " + other.jdbcUrl() + ", but the list verified at start has " + b.jdbcUrl() + " there", topic);
    // One database: the relay's durable-state plugin is pekko.persistence.state.plugin's unless set.
    JournalDatabase single = fresh("mixed-single");
    Config defaultState = ConfigFactory.parseString("jdbc-durable-state-store.use-shared-db = \"elsewhere\"\n"
        + "pekko-persistence-jdbc.shared-databases.elsewhere.db.url = \"" + b.jdbcUrl() + "\"\n"
        + "fencepost.pipeline.outbox.enabled = on").withFallback(single.pekkoConfig());
    assertRefused(defaultState, "[spread] refused to start: the plugins of journal database 0 of 1 reach different "
        + "databases: the outbox durable-state plugin [jdbc-durable-state-store] reaches " + b.jdbcUrl()
        + ", while [jdbc-journal] reaches " + single.jdbcUrl() + ".", topic);
    // One database as a list of one: its verified URL is checked too, and a pool whose database cannot be told refused.
    Config singleJndi = ConfigFactory.parseString("pekko-persistence-jdbc.shared-databases.slick.jndiName = "
        + "\"java:comp/env/jdbc/ledger\"").withFallback(JournalDatabases.single("single", single).pekkoConfig());
    assertRefused(singleJndi, "[spread] refused to start: the journal plugin [jdbc-journal] of journal database 0 of 1 "
        + "names no database this can check against the list verified at start (" + single.jdbcUrl() + ")", topic);
  }

  private static void assertRefused(Config journal, String expectedStart, String topic) throws Exception {
    ActorSystem<Void> system = node("refused", journal);
    try {
      JournalLayoutException e = assertThrows(JournalLayoutException.class, () -> KafkaPipeline.create(system,
          KafkaPipelineIT.Forwarder::new, new KafkaPipelineIT.PaymentDeserializer(),
          settings(system, topic, KafkaBroker.uniqueName("refused"))).start());
      assertTrue(e.getMessage().startsWith(expectedStart), e.getMessage());
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private static long rows(JournalDatabase db, String table, String persistenceId) throws Exception {
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement(
        "SELECT count(*) FROM " + table + " WHERE persistence_id = ?")) {
      st.setString(1, persistenceId);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Distinct payments published to {@code topic}; fails if one was published twice. */
  private static int publishedOnce(String topic) {
    Map<String, Integer> payments = new HashMap<>();
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p, new StringDeserializer(),
        new StringDeserializer())) {
      List<TopicPartition> tps = List.of(0, 1, 2, 3).stream().map(i -> new TopicPartition(topic, i)).toList();
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      long end = consumer.endOffsets(tps).values().stream().mapToLong(Long::longValue).sum();
      int read = 0;
      while (read < end) {
        for (var r : consumer.poll(Duration.ofSeconds(1))) {
          payments.merge(new String(r.value().getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8), 1,
              Integer::sum);
          read++;
        }
      }
    }
    assertTrue(payments.values().stream().allMatch(n -> n == 1), "a payment published twice");
    return payments.size();
  }
}
