package io.fencepost.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.OffsetReset;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.errors.SettingsException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.state.DurableStateStoreRegistry;
import org.apache.pekko.persistence.state.javadsl.DurableStateUpdateStore;
import org.junit.jupiter.api.Test;

/**
 * A deployment on two journal databases: each partition's history is written to, and read back from,
 * the one database its name maps to, through that database's own plugins; nothing of it reaches the
 * other database.
 */
class JournalDatabasesRoutingTest {

  private static final AtomicInteger NAMES = new AtomicInteger();

  private static JournalDatabase fresh() {
    JournalDatabase db = JournalDatabase.h2Memory("routing-" + NAMES.incrementAndGet());
    db.installSchema();
    return db;
  }

  @Test
  void eachPartitionsHistoryIsWrittenToAndReadFromItsOwnDatabaseOnly() throws Exception {
    JournalDatabases dbs = JournalDatabases.of("ledger", List.of(fresh(), fresh()));
    Config config = dbs.pekkoConfig().withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING"))
        .withFallback(ConfigFactory.load());
    PartitionActorSettings settings = PartitionActorSettings.create(config);
    assertEquals(2, settings.journalDatabases());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "routing", config);
    try {
      List<PartitionId> partitions = new ArrayList<>();
      for (int p = 0; p < 8; p++) {
        partitions.add(new PartitionId("ledger", "payments", p));
      }
      for (PartitionId id : partitions) {
        OffsetReset.to(system, id, 100 + id.partition(), settings, Duration.ofSeconds(30))
            .toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
      for (PartitionId id : partitions) {
        int home = dbs.indexOf(id);
        assertEquals(1, rows(dbs.databases().get(home), id), id + " in its own database " + home);
        assertEquals(0, rows(dbs.databases().get(1 - home), id), id + " in the other database");
        // recovered through its own database's plugins: the reset finds the offset it wrote
        OffsetReset.Result again = OffsetReset.to(system, id, 100 + id.partition(), settings, Duration.ofSeconds(30))
            .toCompletableFuture().get(60, TimeUnit.SECONDS);
        assertEquals(100 + id.partition(), again.before(), id + " recovered");
        assertEquals(1, rows(dbs.databases().get(home), id), id + ": nothing written when the offset is there");
      }
      assertEquals(List.of(4L, 4L), List.of(count(dbs.databases().get(0)), count(dbs.databases().get(1))),
          "partitions 0..7 of ledger|payments alternate between the databases");
      // durable state (the outbox relays' positions) in each database's own store
      for (int i = 0; i < 2; i++) {
        DurableStateUpdateStore<Object> store = DurableStateStoreRegistry.get(system.classicSystem())
            .getDurableStateStoreFor(DurableStateUpdateStore.class, dbs.databases().get(i).durableStatePluginId());
        store.upsertObject("position-" + i, 1, (Object) (long) (40 + i), "").toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(java.util.Optional.of(40L + i), store.getObject("position-" + i).toCompletableFuture()
            .get(30, TimeUnit.SECONDS).value());
        assertEquals(1, stateRows(dbs.databases().get(i), "position-" + i), "position " + i + " in database " + i);
        assertEquals(0, stateRows(dbs.databases().get(1 - i), "position-" + i), "position " + i + " elsewhere");
      }
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void theConfigurationOfAListTheDatabasesContradictCannotBeHad() {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabases.of("ledger", List.of(a, b)).pekkoConfig();
    JournalLayoutException e = assertThrows(JournalLayoutException.class,
        () -> JournalDatabases.of("ledger", List.of(b, a)).pekkoConfig());
    assertTrue(e.getMessage().startsWith("[ledger] journal databases refused: the configured list is not the one"),
        e.getMessage());
  }

  @Test
  void severalDatabasesNeedPluginIdsNamingEachDatabase() {
    Config config = ConfigFactory.parseString("fencepost.partition-actor.journal-databases = 2")
        .withFallback(ConfigFactory.load());
    SettingsException e = assertThrows(SettingsException.class, () -> PartitionActorSettings.create(config));
    assertEquals("fencepost.partition-actor.journal-plugin-id", e.key());
    assertTrue(e.getMessage().contains("must contain {database} when journal-databases > 1"), e.getMessage());
  }

  private static long rows(JournalDatabase db, PartitionId id) throws SQLException {
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement(
        "SELECT count(*) FROM event_journal WHERE persistence_id = ?")) {
      st.setString(1, id.persistenceId());
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static long stateRows(JournalDatabase db, String id) throws SQLException {
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement(
        "SELECT count(*) FROM durable_state WHERE persistence_id = ?")) {
      st.setString(1, id);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static long count(JournalDatabase db) throws SQLException {
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement(
        "SELECT count(DISTINCT persistence_id) FROM event_journal WHERE persistence_id LIKE 'fencepost|ledger|%'")) {
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
