package io.fencepost.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.OffsetReset;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.jdbc.JournalAdoption;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import io.fencepost.jdbc.JournalMove;
import io.fencepost.jdbc.internal.JournalIdentities;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class PostgresIT {

  private static final int EVENTS = 1_000;
  private static JournalDatabase postgres;

  @BeforeAll
  static void createDatabase() {
    postgres = Postgres.shared().createDatabase("postgres_it");
    postgres.installSchema();
  }

  @AfterAll
  static void dropDatabase() {
    postgres.dropSchema();
    Postgres.shared().dropDatabase(postgres);
  }

  @Test
  void eventSourcedBehaviorPersistsAndRecoversOnPostgres() {
    persistThenRecover(postgres);
  }

  @Test
  void eventSourcedBehaviorPersistsAndRecoversOnH2() {
    persistThenRecover(H2.inMemory());
  }

  @Test
  void schemaInstallIsRefusedTwiceButIfMissingIsIdempotent() {
    JournalDatabase db = Postgres.shared().createDatabase("schema_twice");
    try {
      db.installSchemaIfMissing();
      db.installSchemaIfMissing();
      IllegalStateException e = Assertions.assertThrows(IllegalStateException.class,
          db::installSchema);
      Assertions.assertTrue(e.getMessage().contains("cannot install the journal schema"),
          e.getMessage());
    } finally {
      Postgres.shared().dropDatabase(db);
    }
  }

  /** The journal databases' identity guard on PostgreSQL: recorded once, a reordered list and an empty stand-in refused. */
  @Test
  void journalIdentitiesAreRecordedAndAWrongListRefusedOnPostgres() throws Exception {
    JournalDatabase a = Postgres.shared().createDatabase("identity_a");
    JournalDatabase b = Postgres.shared().createDatabase("identity_b");
    JournalDatabase empty = Postgres.shared().createDatabase("identity_empty");
    try {
      a.installSchema();
      b.installSchema();
      empty.installSchema();
      JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
      JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
      String reordered = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalDatabases.of("ledger", List.of(b, a)).verifyIdentities()).getMessage();
      Assertions.assertTrue(reordered.contains("database 0 of 2 (" + b.jdbcUrl() + ") says it is database 1 of 2 of "
          + "deployment [ledger]"), reordered);
      try (Connection c = a.connect(); Statement st = c.createStatement()) {
        st.execute("INSERT INTO event_journal (persistence_id, sequence_number, writer, write_timestamp, "
            + "adapter_manifest, event_payload, event_ser_id, event_ser_manifest) "
            + "VALUES ('fencepost|ledger|payments|0', 1, 'w', 0, '', '\\x00', 1, '')");
      }
      String replaced = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalDatabases.of("ledger", List.of(a, empty)).verifyIdentities()).getMessage();
      Assertions.assertTrue(replaced.contains("database 1 of 2 (" + empty.jdbcUrl() + ") records no identity"),
          replaced);
    } finally {
      Postgres.shared().dropDatabase(a);
      Postgres.shared().dropDatabase(b);
      Postgres.shared().dropDatabase(empty);
    }
  }

  /**
   * A copy of one of a deployment's databases (a dump restored elsewhere, a database made from it as a
   * template) carries its identity row: beside the original it would take half of the partitions'
   * writes. It is refused (by a node's start, by the tools that read histories, by a move) until the
   * operator adopts it, offline; from then on the original is refused in its place.
   */
  @Test
  void aCopyOfADeploymentsDatabaseIsRefusedBesideItsOriginalUntilAdopted() throws Exception {
    JournalDatabase a = Postgres.shared().createDatabase("copy_a");
    JournalDatabase b = Postgres.shared().createDatabase("copy_b");
    JournalDatabase added = Postgres.shared().createDatabase("copy_added");
    JournalDatabase copy = null;
    try {
      a.installSchema();
      b.installSchema();
      JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
      copy = Postgres.shared().copyDatabase(b, "copy_of_b");
      JournalDatabase theCopy = copy;

      String refused = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalDatabases.of("ledger", List.of(a, theCopy)).verifyIdentities()).getMessage();
      Assertions.assertTrue(refused.startsWith("[ledger] journal databases refused: database 1 of 2 (" + copy.jdbcUrl()
          + ") says it is database 1 of 2 of deployment [ledger], but that identity was recorded in another database "
          + "(system "), refused);
      Assertions.assertTrue(refused.contains("run `fencepost journal adopt --jdbc-url " + a.jdbcUrl() + " --jdbc-url "
          + copy.jdbcUrl() + "` once"), refused);
      String read = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalDatabases.asRecorded(List.of(a, theCopy))).getMessage();
      Assertions.assertTrue(read.contains("it is a copy, a restore or a clone"), read);
      String moved = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalMove.addDatabases("ledger", List.of(a, theCopy), List.of(added), line -> { })).getMessage();
      Assertions.assertTrue(moved.contains("database 1 (" + copy.jdbcUrl() + ") says it is database 1 of 2 of "
          + "deployment [ledger] but is a copy of the database that recorded it"), moved);
      JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();   // the original still passes

      try (Connection node = copy.connect()) {   // a node still connected: refused, nothing changed
        String busy = Assertions.assertThrows(JournalLayoutException.class,
            () -> JournalAdoption.adoptCopies(List.of(a, theCopy), line -> { })).getMessage();
        Assertions.assertTrue(busy.startsWith("[ledger] refused to adopt while other sessions are connected"), busy);
      }
      Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalDatabases.of("ledger", List.of(a, theCopy)).verifyIdentities());

      List<String> lines = new java.util.ArrayList<>();
      Assertions.assertEquals(List.of(1), JournalAdoption.adoptCopies(List.of(a, copy), lines::add).adopted());
      Assertions.assertTrue(lines.get(0).startsWith("[ledger] database 1 (" + copy.jdbcUrl() + ") adopted: its "
          + "identity was recorded in system "), lines.toString());
      JournalDatabases.of("ledger", List.of(a, copy)).verifyIdentities();
      Assertions.assertEquals(2, JournalDatabases.asRecorded(List.of(a, copy)).size());
      String original = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities()).getMessage();
      Assertions.assertTrue(original.contains("database 0 lists other databases as the deployment's"), original);
      String moveOriginal = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalMove.addDatabases("ledger", List.of(a, b), List.of(added), line -> { })).getMessage();
      Assertions.assertTrue(moveOriginal.contains("database 0 (" + a.jdbcUrl() + ") lists other databases as the "
          + "deployment's (give the databases the nodes run on"), moveOriginal);
      Assertions.assertEquals(List.of(), JournalAdoption.adoptCopies(List.of(a, copy), line -> { }).adopted());
      JournalDatabases.of("ledger", List.of(a, copy)).verifyIdentities();
      String nothing = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalAdoption.adoptCopies(List.of(a, added), line -> { })).getMessage();
      Assertions.assertTrue(nothing.contains("database 1 (" + added.jdbcUrl() + ") records no identity"), nothing);
    } finally {
      Postgres.shared().dropDatabase(a);
      Postgres.shared().dropDatabase(b);
      Postgres.shared().dropDatabase(added);
      if (copy != null) {
        Postgres.shared().dropDatabase(copy);
      }
    }
  }

  /**
   * Adoption registers a list over the databases' own only when it is theirs: a database of another
   * deployment of the same name is refused; so is a copy taken while a move was under way (it may lack
   * histories the move had not copied into it yet).
   */
  @Test
  void adoptionRefusesAnotherDeploymentsDatabaseAndACopyTakenDuringAMove() throws Exception {
    JournalDatabase a = Postgres.shared().createDatabase("adopt_a");
    JournalDatabase b = Postgres.shared().createDatabase("adopt_b");
    JournalDatabase stagingA = Postgres.shared().createDatabase("adopt_staging_a");
    JournalDatabase stagingB = Postgres.shared().createDatabase("adopt_staging_b");
    JournalDatabase copy = null;
    try {
      for (JournalDatabase db : List.of(a, b, stagingA, stagingB)) {
        db.installSchema();
      }
      JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
      JournalDatabases.of("ledger", List.of(stagingA, stagingB)).verifyIdentities();
      String mixed = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalAdoption.adoptCopies(List.of(a, stagingB), line -> { })).getMessage();
      Assertions.assertTrue(mixed.startsWith("[ledger] refused to adopt: database 0 (" + a.jdbcUrl() + ") lists other "
          + "databases as the deployment's than these"), mixed);
      JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();   // nothing changed
      JournalDatabases.of("ledger", List.of(stagingA, stagingB)).verifyIdentities();

      try (Connection c = b.connect(); Statement st = c.createStatement()) {
        st.execute("UPDATE fencepost_journal_identity SET moving = 1");   // as a move marks it
      }
      copy = Postgres.shared().copyDatabase(b, "adopt_moving_copy");
      JournalDatabase theCopy = copy;
      String moving = Assertions.assertThrows(JournalLayoutException.class,
          () -> JournalAdoption.adoptCopies(List.of(a, theCopy), line -> { })).getMessage();
      Assertions.assertTrue(moving.startsWith("[ledger] refused to adopt database 1 (" + copy.jdbcUrl() + "): a copy "
          + "taken while a move of histories was under way"), moving);
    } finally {
      for (JournalDatabase db : List.of(a, b, stagingA, stagingB)) {
        Postgres.shared().dropDatabase(db);
      }
      if (copy != null) {
        Postgres.shared().dropDatabase(copy);
      }
    }
  }

  /**
   * A user that may not call {@code pg_control_system()} reads no place (said at WARN) and never
   * erases the place a database recorded: the guard against copies stays on for the others.
   */
  @Test
  void aUserThatCannotReadThePlaceNeverErasesARecordedOne() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("place_limited");
    String role = "limited_" + Long.toHexString(System.nanoTime());
    try {
      db.installSchema();
      JournalDatabases.of("ledger", List.of(db)).verifyIdentities();
      try (Connection c = db.connect(); Statement st = c.createStatement()) {
        st.execute("CREATE ROLE " + role + " LOGIN PASSWORD 'limited'");
        st.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO " + role);
        st.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO " + role);
        st.execute("REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC");
      }
      // (without the URL's parameters: a user named there would win over this one)
      JournalDatabase limited = JournalDatabase.of(db.jdbcUrl().split("\\?")[0], role, "limited");
      String recorded;
      try (Connection c = db.connect()) {
        recorded = JournalIdentities.readIfRecorded(c).orElseThrow().place();
      }
      Assertions.assertTrue(recorded.startsWith("system "), recorded);
      try (Connection c = limited.connect()) {
        Assertions.assertEquals("", JournalIdentities.placeOf(c));
        JournalIdentities.Recorded seen = JournalIdentities.readIfRecorded(c).orElseThrow();
        Assertions.assertFalse(seen.copied(), "cannot tell: not refused");
        c.setAutoCommit(false);
        JournalIdentities.replace(c, seen.identity(), seen.member(), seen.members());   // as a move does
        c.commit();
      }
      JournalDatabases.of("ledger", List.of(limited)).verifyIdentities();
      try (Connection c = db.connect()) {
        Assertions.assertEquals(recorded, JournalIdentities.readIfRecorded(c).orElseThrow().place(), "kept");
      }
    } finally {
      Postgres.shared().dropDatabase(db);
      Postgres.shared().dropRole(role);
    }
  }

  /**
   * The race behind nodes starting together, made certain: one session has created the identity table
   * but not committed; another's create waits on it and, once it commits, must pass (PostgreSQL fails
   * the loser's {@code IF NOT EXISTS} with "type ... already exists" or a unique-key violation).
   */
  @Test
  void aCreateThatLosesTheRaceToAnotherSessionPasses() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("create_race");
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newSingleThreadExecutor();
    try (Connection winner = db.connect(); Connection loser = db.connect(); Connection watcher = db.connect()) {
      winner.setAutoCommit(false);
      io.fencepost.jdbc.internal.JournalIdentities.createTableIfMissing(winner);
      int loserPid;
      try (Statement st = loser.createStatement(); java.sql.ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        loserPid = rs.getInt(1);
      }
      java.util.concurrent.Future<?> losing = pool.submit(() -> {
        io.fencepost.jdbc.internal.JournalIdentities.createTableIfMissing(loser);
        return null;
      });
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (!waitsOnALock(watcher, loserPid)) {   // (a session's statistics are one image per transaction)
        Assertions.assertTrue(System.nanoTime() < deadline, "the second create never waited on the first's lock");
        Assertions.assertFalse(losing.isDone(), "the second create did not wait on the first");
        Thread.sleep(20);
      }
      winner.commit();
      losing.get(30, TimeUnit.SECONDS);
      Assertions.assertTrue(io.fencepost.jdbc.internal.SqlScripts.tableExists(loser, "fencepost_journal_identity"));
    } finally {
      pool.shutdownNow();
      Postgres.shared().dropDatabase(db);
    }
  }

  private static boolean waitsOnALock(Connection c, int pid) throws java.sql.SQLException {
    try (java.sql.PreparedStatement st = c.prepareStatement(
        "SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?")) {
      st.setInt(1, pid);
      try (java.sql.ResultSet rs = st.executeQuery()) {
        return rs.next() && "Lock".equals(rs.getString(1));
      }
    }
  }

  /** Nodes starting together on fresh databases: PostgreSQL's CREATE TABLE IF NOT EXISTS races; every start passes. */
  @Test
  void nodesStartingTogetherOnPostgresAllPass() throws Exception {
    JournalDatabase a = Postgres.shared().createDatabase("together_a");
    JournalDatabase b = Postgres.shared().createDatabase("together_b");
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(6);
    try {
      a.installSchema();
      b.installSchema();
      java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
      List<java.util.concurrent.Future<?>> starts = new java.util.ArrayList<>();
      for (int i = 0; i < 6; i++) {
        starts.add(pool.submit(() -> {
          go.await();
          JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
          return null;
        }));
      }
      go.countDown();
      for (java.util.concurrent.Future<?> start : starts) {
        start.get(60, java.util.concurrent.TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
      Postgres.shared().dropDatabase(a);
      Postgres.shared().dropDatabase(b);
    }
  }

  /** Adding a database on PostgreSQL: refused while another session is connected, then each history moved once. */
  @Test
  void aMoveOfHistoriesOnPostgresWaitsForTheNodesToStopAndMovesEachHistoryOnce() throws Exception {
    JournalDatabase x = Postgres.shared().createDatabase("move_x");
    JournalDatabase y = Postgres.shared().createDatabase("move_y");
    try {
      x.installSchema();
      y.installSchema();
      JournalDatabases.of("ledger", List.of(x)).verifyIdentities();
      try (Connection c = x.connect(); Statement st = c.createStatement()) {
        for (int p = 0; p < 4; p++) {
          for (int seq = 1; seq <= 3; seq++) {
            st.execute("INSERT INTO event_journal (persistence_id, sequence_number, writer, write_timestamp, "
                + "adapter_manifest, event_payload, event_ser_id, event_ser_manifest) "
                + "VALUES ('fencepost|ledger|payments|" + p + "', " + seq + ", 'w', 0, '', '\\x00', 1, '')");
          }
        }
      }
      try (Connection node = x.connect()) {
        String refused = Assertions.assertThrows(JournalLayoutException.class,
            () -> JournalMove.addDatabases("ledger", List.of(x), List.of(y), line -> { })).getMessage();
        Assertions.assertTrue(refused.contains(x.jdbcUrl() + " has 1 other session(s)"), refused);
      }
      JournalMove.Report report = JournalMove.addDatabases("ledger", List.of(x), List.of(y), line -> { });
      JournalDatabases two = JournalDatabases.of("ledger", List.of(x, y));
      two.verifyIdentities();
      Assertions.assertEquals(List.of(1, 3), report.moved().stream().map(PartitionId::partition).toList());
      Assertions.assertEquals(6, report.rows());
      for (int p = 0; p < 4; p++) {
        String pid = "fencepost|ledger|payments|" + p;
        int home = two.indexOf(new PartitionId("ledger", "payments", p));
        Assertions.assertEquals(home == 0 ? 3 : 0, journalRows(x, pid), pid + " in x");
        Assertions.assertEquals(home == 1 ? 3 : 0, journalRows(y, pid), pid + " in y");
      }
    } finally {
      Postgres.shared().dropDatabase(x);
      Postgres.shared().dropDatabase(y);
    }
  }

  /**
   * The move's session count is a courtesy, the fence is the guarantee: a node whose pool held no
   * connection while the move counted (here the server dropped its sessions, as a pool retiring idle
   * connections or a connection pooler would hide them) still writes with the old list afterwards, and
   * PostgreSQL refuses its write of a moved history, naming the move, while it takes the one of a
   * history that stayed.
   */
  @Test
  void aNodeTheMovesSessionCountMissedCannotWriteAMovedHistoryOnPostgres() throws Exception {
    JournalDatabase x = Postgres.shared().createDatabase("fence_x");
    JournalDatabase y = Postgres.shared().createDatabase("fence_y");
    try {
      x.installSchema();
      y.installSchema();
      JournalDatabases one = JournalDatabases.of("ledger", List.of(x));
      Config stale = one.pekkoConfig().withFallback(ConfigFactory.parseString("pekko.loglevel = OFF"))
          .withFallback(ConfigFactory.load());
      PartitionActorSettings settings = PartitionActorSettings.create(stale);
      PartitionId moved = new PartitionId("ledger", "payments", 1);
      PartitionId stayed = new PartitionId("ledger", "payments", 0);
      Assertions.assertEquals(List.of(1, 0), List.of(moved.journalDatabase(2), stayed.journalDatabase(2)));
      ActorSystem<Void> node = ActorSystem.create(Behaviors.empty(), "stale", stale);
      try {
        for (PartitionId p : List.of(moved, stayed)) {
          OffsetReset.to(node, p, 100, settings, Duration.ofSeconds(30)).toCompletableFuture().get(60, TimeUnit.SECONDS);
        }
        List<String> duringTheMove = new java.util.ArrayList<>();
        moveWhileTheServerDropsTheNodesSessions(x, y, line -> {
          if (line.startsWith("every database records that a move is under way")) {
            // Marked, nothing copied yet: the node writes now, the history that stays included.
            for (PartitionId p : List.of(moved, stayed)) {
              ExecutionException e = Assertions.assertThrows(ExecutionException.class,
                  () -> resetPastDroppedConnections(node, p, settings));
              duringTheMove.add(e.getCause().getMessage());
            }
          }
        });
        Assertions.assertEquals(2, duringTheMove.size(), duringTheMove.toString());
        for (String refusal : duringTheMove) {
          Assertions.assertTrue(refusal.contains("is not written while a journal move of deployment [ledger] is under "
              + "way in this database"), refusal);
        }
        ExecutionException refused = Assertions.assertThrows(ExecutionException.class,
            () -> resetPastDroppedConnections(node, moved, settings));
        Assertions.assertInstanceOf(JournalLayoutException.class, refused.getCause(), refused.toString());
        Assertions.assertTrue(refused.getCause().getMessage().contains("journal fence: [" + moved.persistenceId()
            + "] belongs to database 1 of 2 of deployment [ledger] since a journal move, not to this database "
            + "(0 of 2)"), refused.getCause().getMessage());
        Assertions.assertEquals(100, resetPastDroppedConnections(node, stayed, settings),
            "a history that stayed takes the write");
      } finally {
        node.terminate();
        node.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
      Assertions.assertEquals(0, journalRows(x, moved.persistenceId()), "nothing of the moved history in its old home");
      Assertions.assertEquals(1, journalRows(y, moved.persistenceId()), "the moved history as the move copied it");
      Assertions.assertEquals(2, journalRows(x, stayed.persistenceId()));
    } finally {
      Postgres.shared().dropDatabase(x);
      Postgres.shared().dropDatabase(y);
    }
  }

  /** PostgreSQL's copy of Java's String.hashCode, which the fence maps partitions with, agrees with Java's. */
  @Test
  void theFencesHashIsJavasOnPostgres() throws Exception {
    JournalDatabase x = Postgres.shared().createDatabase("fence_hash");
    try {
      x.installSchema();
      JournalDatabase y = Postgres.shared().createDatabase("fence_hash_y");
      try {
        y.installSchema();
        JournalDatabases.of("ledger", List.of(x)).verifyIdentities();
        JournalMove.addDatabases("ledger", List.of(x), List.of(y), line -> { });   // installs the fence
      } finally {
        Postgres.shared().dropDatabase(y);
      }
      List<String> names = List.of("", "a", "ledger|payments|7", "ledger|payments|2147483647",
          "Grüße-Gruppe|zahlungen|3", "g\u00e9\u4e2d|t|0", "g\ud83d\ude00\ud834\udd1e|t|12", "x".repeat(300) + "|t|5");
      try (Connection c = x.connect(); java.sql.PreparedStatement st = c.prepareStatement("SELECT fencepost_java_hash(?)")) {
        for (String name : names) {
          st.setString(1, name);
          try (java.sql.ResultSet rs = st.executeQuery()) {
            rs.next();
            Assertions.assertEquals(name.hashCode(), rs.getInt(1), name);
          }
        }
      }
    } finally {
      Postgres.shared().dropDatabase(x);
    }
  }

  /**
   * Resets {@code p} to 200 through the node; a recovery that meets one of the connections the server
   * dropped (the pool hands each out once more before it discards it) fails at once and is tried again.
   */
  private static long resetPastDroppedConnections(ActorSystem<?> node, PartitionId p, PartitionActorSettings settings)
      throws Exception {
    for (int attempt = 1; ; attempt++) {
      try {
        return OffsetReset.to(node, p, 200, settings, Duration.ofSeconds(30)).toCompletableFuture()
            .get(60, TimeUnit.SECONDS).before();
      } catch (ExecutionException e) {
        if (e.getCause() instanceof JournalLayoutException || attempt == 40
            || !droppedConnection(String.valueOf(e.getCause().getMessage()))) {
          throw e;
        }
      }
    }
  }

  private static boolean droppedConnection(String failure) {
    return failure.contains("terminating connection due to administrator") || failure.contains("has been closed")
        || failure.contains("I/O error");
  }

  /**
   * Runs the move once the server has dropped every other session of {@code x} (a node's pool then
   * holds only dead connections, which the session count cannot see); a pool that reconnected in between
   * only makes the move refuse, changing nothing, and it is tried again.
   */
  private static void moveWhileTheServerDropsTheNodesSessions(JournalDatabase x, JournalDatabase y,
      java.util.function.Consumer<String> progress) throws Exception {
    for (int attempt = 1; ; attempt++) {
      try (Connection c = x.connect(); Statement st = c.createStatement()) {
        st.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
            + "AND pid <> pg_backend_pid()");
      }
      try {
        JournalMove.addDatabases("ledger", List.of(x), List.of(y), progress);
        return;
      } catch (JournalLayoutException busy) {
        if (!busy.getMessage().contains("other session(s)") || attempt == 20) {
          throw busy;
        }
      }
    }
  }

  private static long journalRows(JournalDatabase db, String pid) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement();
        java.sql.ResultSet rs = st.executeQuery("SELECT count(*) FROM event_journal WHERE persistence_id = '" + pid
            + "'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void persistThenRecover(JournalDatabase db) {
    Config config = db.pekkoConfig().withFallback(ConfigFactory.load());
    String id = "sum-" + System.nanoTime();

    ActorTestKit first = ActorTestKit.create("writer", config);
    try {
      TestProbe<Long> probe = first.createTestProbe();
      ActorRef<Object> sum = first.spawn(Sum.create(id));
      for (long i = 1; i <= EVENTS; i++) {
        sum.tell(new Add(i, probe.ref()));
      }
      probe.receiveSeveralMessages(EVENTS, Duration.ofSeconds(60));
    } finally {
      first.shutdownTestKit();
    }

    ActorTestKit second = ActorTestKit.create("reader", config);
    try {
      TestProbe<Long> probe = second.createTestProbe();
      ActorRef<Object> sum = second.spawn(Sum.create(id));
      sum.tell(new Get(probe.ref()));
      long expected = (long) EVENTS * (EVENTS + 1) / 2;
      assertEquals(expected, probe.receiveMessage(Duration.ofSeconds(30)));
      assertEquals(EVENTS, Sum.eventsReplayed.get(id));
    } finally {
      second.shutdownTestKit();
    }
  }

  record Add(long value, ActorRef<Long> replyTo) {
  }

  record Get(ActorRef<Long> replyTo) {
  }

  /** Sums Long events; counts how many events each recovery replayed. */
  static final class Sum extends EventSourcedBehavior<Object, Long, Long> {
    static final ConcurrentHashMap<String, Integer> eventsReplayed =
        new ConcurrentHashMap<>();
    private final String id;

    private Sum(String id) {
      super(PersistenceId.ofUniqueId(id));
      this.id = id;
    }

    static Behavior<Object> create(String id) {
      eventsReplayed.put(id, 0);
      return new Sum(id);
    }

    @Override
    public Long emptyState() {
      return 0L;
    }

    @Override
    public CommandHandler<Object, Long, Long> commandHandler() {
      return newCommandHandlerBuilder().forAnyState()
          .onCommand(Add.class, (state, add) -> Effect().persist(add.value()).thenReply(add.replyTo(), s -> s))
          .onCommand(Get.class, (state, get) -> Effect().reply(get.replyTo(), state))
          .build();
    }

    @Override
    public EventHandler<Long, Long> eventHandler() {
      return newEventHandlerBuilder().forAnyState().onAnyEvent((state, event) -> {
        eventsReplayed.merge(id, 1, Integer::sum);
        return state + event;
      });
    }
  }
}
