package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import io.fencepost.jdbc.JdbcProjection;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Partitions added to the input topic under a running pipeline and read model, as an operator does. */
@Tag("integration")
@Timeout(value = 8, unit = TimeUnit.MINUTES)
class PartitionsAddedIT {

  private static KafkaBroker broker;
  private static JournalDatabase postgres;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.create().start();
    postgres = Postgres.shared().createDatabase("partitions_added_it");
    postgres.installSchema();
  }

  @AfterAll
  static void stop() {
    broker.close();
    Postgres.shared().dropDatabase(postgres);
  }

  @Test
  void partitionsAddedUnderARunningPipelineReachTheReadModelEachPaymentOnce() throws Exception {
    String topic = KafkaBroker.uniqueName("grown");
    String group = KafkaBroker.uniqueName("grown-group");
    broker.createTopic(topic, 2);
    try (Connection c = postgres.connect(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE grown_balances (merchant text PRIMARY KEY, cents bigint NOT NULL, "
          + "payments bigint NOT NULL)");
    }
    ActorSystem<Void> system = KafkaPipelineIT.node("grown", postgres);
    JdbcProjection projection = null;
    try {
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "grown"),
          new KafkaPipelineIT.PaymentDeserializer(),
          PipelineSettings.create(system, "grown").withBootstrapServers(broker.bootstrapServers())
              .withTopics(List.of(topic)).withBatch(500, Duration.ofMillis(20)).withGroupId(group)).start();
      projection = JdbcProjection.forTopics(system, "grown", postgres, group, List.of(topic),
          PartitionsAddedIT::credit).installSchema().start(Duration.ofMillis(200));

      long[] before = KafkaPipelineIT.produceTo(broker, topic, 2, 2_000, "before-");
      awaitPayments(2_000, Duration.ofMinutes(2), pipeline, projection);

      try (Admin admin = broker.admin()) {
        admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get(30, TimeUnit.SECONDS);
      }
      long[] after = KafkaPipelineIT.produceTo(broker, topic, 4, 4_000, "after-");
      // The consumer sees the new partitions within its metadata max age (30 s), the projection within a
      // run: about 35 s here. The bound leaves room for one stall-timeout (60 s) reseek on a slow machine.
      awaitPayments(6_000, Duration.ofMinutes(4), pipeline, projection);

      List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
      assertEquals(4, views.size(), "every partition is consumed: " + views);
      for (PartitionView v : views) {
        int p = v.partition().partition();
        long expected = (p < 2 ? before[p] : 0) + after[p];
        assertEquals(expected, v.appliedRecords(), "applied on partition " + p);
        assertEquals(expected, v.nextOffset().getAsLong(), "next offset of partition " + p);
      }
      Map<String, Long> journaled = new TreeMap<>();
      for (PartitionView v : views) {
        for (TestLedger.Credited c : KafkaPipelineIT.credits(system, v.partition())) {
          journaled.merge(c.merchant(), c.cents(), Long::sum);
        }
      }
      assertEquals(journaled, balances(), "the read model holds exactly the journaled credits, new partitions too");
      assertEquals(6_000, payments(), "each of the 6,000 payments counted once");
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      if (projection != null) {
        projection.close();
      }
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private static void credit(Connection tx, AppliedBatch batch) throws SQLException {
    try (PreparedStatement st = tx.prepareStatement("INSERT INTO grown_balances (merchant, cents, payments) "
        + "VALUES (?, ?, 1) ON CONFLICT (merchant) DO UPDATE SET cents = grown_balances.cents + EXCLUDED.cents, "
        + "payments = grown_balances.payments + 1")) {
      for (Object e : batch.events()) {
        TestLedger.Credited c = (TestLedger.Credited) e;
        st.setString(1, c.merchant());
        st.setLong(2, c.cents());
        st.executeUpdate();
      }
    }
  }

  private static void awaitPayments(long expected, Duration timeout, Pipeline pipeline, JdbcProjection projection)
      throws Exception {
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    long seen = payments();
    while (seen < expected && System.nanoTime() < deadline) {
      Thread.sleep(200);
      seen = payments();
    }
    if (seen != expected) {
      // Which side lags: the pipeline (applied, next offset, last error per partition) or the read model.
      StringBuilder why = new StringBuilder();
      for (PartitionView v : pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS)) {
        why.append("\n  ").append(v).append(", read model at journal entry ")
            .append(projection.position(v.partition().persistenceId()));
      }
      assertEquals(expected, seen, "payments in the read model within " + timeout + why);
    }
    System.out.printf("%d payments in the read model after %d ms%n", expected, (System.nanoTime() - start) / 1_000_000);
  }

  private static long payments() throws Exception {
    try (Connection c = postgres.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT coalesce(sum(payments), 0) FROM grown_balances")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static Map<String, Long> balances() throws Exception {
    Map<String, Long> out = new TreeMap<>();
    try (Connection c = postgres.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT merchant, cents FROM grown_balances")) {
      while (rs.next()) {
        out.put(rs.getString(1), rs.getLong(2));
      }
    }
    return out;
  }
}
