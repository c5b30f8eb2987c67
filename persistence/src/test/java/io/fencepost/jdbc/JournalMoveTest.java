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
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.OffsetReset;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalLayoutException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;

/**
 * Adding a journal database: the histories the longer list maps elsewhere move there whole (journal,
 * snapshots, relay position, projection positions), each partition then recovers its stored offset
 * from its new home, an interrupted move keeps every node out until it is run again, and a move is
 * refused while a node is connected or with the wrong list.
 */
class JournalMoveTest {

  private static final AtomicInteger NAMES = new AtomicInteger();
  private static final List<PartitionId> PARTITIONS = List.of(0, 1, 2, 3, 4, 5, 6, 7).stream()
      .map(p -> new PartitionId("ledger", "payments", p)).toList();

  private static JournalDatabase fresh() {
    JournalDatabase db = JournalDatabase.h2Memory("move-" + NAMES.incrementAndGet());
    db.installSchema();
    return db;
  }

  /** Writes each partition's stored offset (100 + p) through the deployment's plugins, and a relay position and projection position beside it. */
  private static void writeHistories(JournalDatabases dbs, long base) throws Exception {
    Config config = dbs.pekkoConfig().withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING"))
        .withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "move", config);
    try {
      for (PartitionId id : PARTITIONS) {
        OffsetReset.to(system, id, base + id.partition(), PartitionActorSettings.create(config), Duration.ofSeconds(30))
            .toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  /** The stored offsets each partition recovers, through the deployment's plugins (unchanged: it resets to them). */
  private static Map<Integer, Long> recovered(JournalDatabases dbs, long base) throws Exception {
    Config config = dbs.pekkoConfig().withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING"))
        .withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "recover", config);
    Map<Integer, Long> out = new TreeMap<>();
    try {
      for (PartitionId id : PARTITIONS) {
        out.put(id.partition(), OffsetReset.to(system, id, base + id.partition(), PartitionActorSettings.create(config),
            Duration.ofSeconds(30)).toCompletableFuture().get(60, TimeUnit.SECONDS).before());
      }
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
    return out;
  }

  private static void extras(JournalDatabase db, PartitionId id) throws SQLException {
    try (Connection c = db.connect()) {
      try (PreparedStatement st = c.prepareStatement("INSERT INTO durable_state (persistence_id, revision, "
          + "state_payload, state_serial_id, state_serial_manifest, tag, state_timestamp) VALUES (?, 3, ?, 1, '', '', 5)")) {
        st.setString(1, "fencepost-outbox|" + id.persistenceId());
        st.setBytes(2, new byte[] {1, 2, 3});
        st.executeUpdate();
      }
      c.createStatement().execute(io.fencepost.jdbc.internal.ProjectionTables.CREATE_OFFSETS);
      try (PreparedStatement st = c.prepareStatement(
          "INSERT INTO fencepost_projection_offsets (projection, persistence_id, seq) VALUES ('balances', ?, 7)")) {
        st.setString(1, id.persistenceId());
        st.executeUpdate();
      }
    }
  }

  private static long rows(JournalDatabase db, String table, String persistenceId) throws SQLException {
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement(
        "SELECT count(*) FROM " + table + " WHERE persistence_id = ?")) {
      st.setString(1, persistenceId);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static Map<Integer, Long> expectedOffsets(long base) {
    Map<Integer, Long> out = new TreeMap<>();
    PARTITIONS.forEach(id -> out.put(id.partition(), base + id.partition()));
    return out;
  }

  @Test
  void addingADatabaseMovesTheHistoriesItNowHoldsAndEachPartitionRecoversItsOffsetThere() throws Exception {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabase c = fresh();
    writeHistories(JournalDatabases.of("ledger", List.of(a, b)), 100);
    for (PartitionId id : PARTITIONS) {
      extras(JournalDatabases.of("ledger", List.of(a, b)).databaseOf(id), id);
    }
    List<String> lines = new ArrayList<>();
    JournalMove.Report report = JournalMove.addDatabases("ledger", List.of(a, b), List.of(c), lines::add);

    JournalDatabases three = JournalDatabases.of("ledger", List.of(a, b, c));
    List<PartitionId> moving = PARTITIONS.stream().filter(id -> id.journalDatabase(2) != id.journalDatabase(3)).toList();
    assertTrue(!moving.isEmpty(), "some partitions change database");
    assertEquals(moving, report.moved());
    List<JournalDatabase> all = List.of(a, b, c);
    for (PartitionId id : PARTITIONS) {
      for (int i = 0; i < 3; i++) {
        JournalDatabase db = all.get(i);
        long expected = i == three.indexOf(id) ? 1 : 0;
        assertEquals(expected, rows(db, "event_journal", id.persistenceId()), id + " journal in " + db);
        assertEquals(expected, rows(db, "durable_state", "fencepost-outbox|" + id.persistenceId()), id + " relay");
        assertEquals(expected, rows(db, "fencepost_projection_offsets", id.persistenceId()), id + " projection");
      }
    }
    assertTrue(lines.get(lines.size() - 1).contains(moving.size() + " partition(s) moved"), lines.toString());
    assertEquals(expectedOffsets(100), recovered(three, 100), "each partition recovers its offset at its new home");
    // the old list is refused from now on
    JournalLayoutException old = assertThrows(JournalLayoutException.class,
        () -> JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities());
    assertTrue(old.getMessage().contains("says it is database 0 of 3"), old.getMessage());
  }

  @Test
  void anInterruptedMoveKeepsEveryNodeOutAndTheSameMoveFinishesIt() throws Exception {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    writeHistories(JournalDatabases.of("ledger", List.of(a)), 200);
    RuntimeException crash = new RuntimeException("the move's process died");
    assertThrows(RuntimeException.class, () -> JournalMove.addDatabases("ledger", List.of(a), List.of(b), line -> {
      if (line.startsWith("database 0")) {
        throw crash;   // after database 0 dropped what moved away, before database 1 settled
      }
    }));
    assertThrows(JournalLayoutException.class, () -> JournalDatabases.of("ledger", List.of(a)).verifyIdentities());
    JournalLayoutException refused = assertThrows(JournalLayoutException.class,
        () -> JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities());
    assertTrue(refused.getMessage().contains("a move of the deployment's histories began and has not finished"),
        refused.getMessage());
    // every history is in one database or the other meanwhile
    for (PartitionId id : PARTITIONS) {
      assertEquals(1, rows(a, "event_journal", id.persistenceId()) + rows(b, "event_journal", id.persistenceId()),
          id.toString());
    }
    // Meanwhile the databases take no partition's write but the move's: not the copies a re-run replaces.
    PartitionId copied = PARTITIONS.stream().filter(id -> id.journalDatabase(2) == 1).findFirst().orElseThrow();
    try (Connection c = b.connect(); PreparedStatement st = c.prepareStatement(
        "INSERT INTO fencepost_projection_offsets (projection, persistence_id, seq) VALUES ('balances', ?, 1)")) {
      st.setString(1, copied.persistenceId());
      SQLException e = assertThrows(SQLException.class, st::executeUpdate);
      assertEquals("FP001", e.getSQLState(), e.toString());
    }
    JournalMove.addDatabases("ledger", List.of(a), List.of(b), line -> { });
    assertEquals(expectedOffsets(200), recovered(JournalDatabases.of("ledger", List.of(a, b)), 200));
  }

  @Test
  void aMoveIsRefusedWhileANodeIsConnectedAndChangesNothing() throws Exception {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    writeHistories(JournalDatabases.of("ledger", List.of(a)), 300);
    try (Connection node = a.connect()) {
      JournalLayoutException e = assertThrows(JournalLayoutException.class,
          () -> JournalMove.addDatabases("ledger", List.of(a), List.of(b), line -> { }));
      assertEquals("[ledger] refused to move histories while other sessions are connected (a node runs, or another "
          + "tool): " + a.jdbcUrl() + " has 1 other session(s). Stop every node of the deployment (and close other "
          + "clients of these databases), then run the move again; nothing was changed", e.getMessage());
    }
    assertEquals(expectedOffsets(300), recovered(JournalDatabases.of("ledger", List.of(a)), 300));
  }

  @Test
  void aMoveIsRefusedWithAListTheDatabasesContradictOrAnAddedDatabaseThatHoldsAJournal() throws Exception {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabase c = fresh();
    writeHistories(JournalDatabases.of("ledger", List.of(a, b)), 400);
    JournalLayoutException reordered = assertThrows(JournalLayoutException.class,
        () -> JournalMove.addDatabases("ledger", List.of(b, a), List.of(c), line -> { }));
    assertTrue(reordered.getMessage().startsWith("[ledger] refused to move histories from 2 to 3 databases: database 0 ("
        + b.jdbcUrl() + ") says it is database 1 of 2 of deployment [ledger]"), reordered.getMessage());
    writeHistories(JournalDatabases.of("other", List.of(c)), 1);
    JournalLayoutException full = assertThrows(JournalLayoutException.class,
        () -> JournalMove.addDatabases("ledger", List.of(a, b), List.of(c), line -> { }));
    assertTrue(full.getMessage().contains("database 2 (" + c.jdbcUrl() + ") says it is database 0 of 1 of deployment "
        + "[other]"), full.getMessage());
    assertEquals(expectedOffsets(400), recovered(JournalDatabases.of("ledger", List.of(a, b)), 400));
  }

  /**
   * A writer the move's session count cannot see (here a node whose pool connected only after the
   * move; in production one whose pool held no connection at that moment, or one behind a connection
   * pooler) still writes with the old list: the database refuses its writes of a moved history and of
   * that history's projection position, naming the move, and takes those of histories that stayed.
   */
  @Test
  void aWriterTheMoveDidNotSeeCannotWriteAMovedHistoryThere() throws Exception {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabases one = JournalDatabases.of("ledger", List.of(a));
    writeHistories(one, 100);
    for (PartitionId id : PARTITIONS) {
      extras(a, id);
    }
    Config stale = one.pekkoConfig().withFallback(ConfigFactory.parseString("pekko.loglevel = OFF"))
        .withFallback(ConfigFactory.load());
    PartitionId moved = PARTITIONS.stream().filter(id -> id.journalDatabase(2) == 1).findFirst().orElseThrow();
    PartitionId stayed = PARTITIONS.stream().filter(id -> id.journalDatabase(2) == 0).findFirst().orElseThrow();
    PartitionActorSettings settings = PartitionActorSettings.create(stale);
    List<String> duringTheMove = new ArrayList<>();
    JournalMove.addDatabases("ledger", List.of(a), List.of(b), line -> {
      if (line.startsWith("every database records that a move is under way")) {
        // Marked, nothing copied yet: a writer the session count did not see writes now.
        ActorSystem<Void> early = ActorSystem.create(Behaviors.empty(), "early", stale);
        try {
          for (PartitionId id : List.of(moved, stayed)) {
            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> OffsetReset.to(early, id, 700, settings, Duration.ofSeconds(30)).toCompletableFuture()
                    .get(60, TimeUnit.SECONDS));
            duringTheMove.add(e.getCause().getMessage());
          }
        } finally {
          early.terminate();
          try {
            early.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        }
      }
    });
    assertEquals(2, duringTheMove.size(), duringTheMove.toString());
    for (int i = 0; i < 2; i++) {
      String pid = List.of(moved, stayed).get(i).persistenceId();
      assertTrue(duringTheMove.get(i).contains("journal fence: [" + pid + "] is not written while a journal move of "
          + "deployment [ledger] is under way in this database"), duringTheMove.get(i));
    }
    ActorSystem<Void> node = ActorSystem.create(Behaviors.empty(), "stale", stale);
    try {
      java.util.concurrent.ExecutionException refused = assertThrows(java.util.concurrent.ExecutionException.class,
          () -> OffsetReset.to(node, moved, 500, settings, Duration.ofSeconds(30)).toCompletableFuture()
              .get(60, TimeUnit.SECONDS));
      assertTrue(refused.getCause() instanceof JournalLayoutException, refused.getCause().toString());
      assertTrue(refused.getCause().getMessage().contains("journal fence: [" + moved.persistenceId() + "] belongs to "
          + "database 1 of 2 of deployment [ledger] since a journal move, not to this database (0 of 2)"),
          refused.getCause().getMessage());
      assertEquals(0, rows(a, "event_journal", moved.persistenceId()), "nothing of the moved history in its old home");
      assertEquals(100 + stayed.partition(), OffsetReset.to(node, stayed, 500, settings, Duration.ofSeconds(30))
          .toCompletableFuture().get(60, TimeUnit.SECONDS).before(), "a history that stayed takes the write");
    } finally {
      node.terminate();
      node.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
    try (Connection c = a.connect(); PreparedStatement st = c.prepareStatement(
        "INSERT INTO fencepost_projection_offsets (projection, persistence_id, seq) VALUES ('balances', ?, 1)")) {
      st.setString(1, moved.persistenceId());
      SQLException e = assertThrows(SQLException.class, st::executeUpdate);
      assertEquals("FP001", e.getSQLState(), e.toString());
    }
    Map<Integer, Long> expected = expectedOffsets(100);
    expected.put(stayed.partition(), 500L);
    assertEquals(expected, recovered(JournalDatabases.of("ledger", List.of(a, b)), 100),
        "the moved history holds only what the move copied");
  }
}
