package io.fencepost.jdbc;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.fencepost.JournalIdentity;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.jdbc.internal.JournalIdentities;
import org.junit.jupiter.api.Test;

/**
 * The guard against a moved history: a deployment's journal databases record which one each is on
 * the first start, and a list that does not match (reordered, shortened, lengthened, another
 * deployment's, or an empty database in place of one with history) is refused with one line naming
 * each database, and without writing anything.
 */
class JournalDatabasesTest {

  private static final AtomicInteger NAMES = new AtomicInteger();

  private static JournalDatabase fresh() {
    JournalDatabase db = JournalDatabase.h2Memory("identity-" + NAMES.incrementAndGet());
    db.installSchema();
    return db;
  }

  private static String refusal(JournalDatabases dbs) {
    return assertThrows(JournalLayoutException.class, dbs::verifyIdentities).getMessage();
  }

  @Test
  void theFirstStartRecordsEachDatabaseAndTheSameListPassesAgain() {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
    assertEquals(Optional.of(new JournalIdentity("ledger", 0, 2)), identity(a));
    assertEquals(Optional.of(new JournalIdentity("ledger", 1, 2)), identity(b));
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
  }

  @Test
  void aReorderedListIsRefusedNamingWhatEachDatabaseSays() {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
    assertEquals("[ledger] journal databases refused: the configured list is not the one the deployment's "
        + "histories were written with (reordered, a database missing or added, or another deployment's): "
        + "database 0 of 2 (" + b.jdbcUrl() + ") says it is database 1 of 2 of deployment [ledger]; "
        + "database 1 of 2 (" + a.jdbcUrl() + ") says it is database 0 of 2 of deployment [ledger]. List the "
        + "databases in the order the deployment first used them; databases are added only by moving the "
        + "histories of the partitions that map to them while no node runs",
        refusal(JournalDatabases.of("ledger", List.of(b, a))));
  }

  @Test
  void aMissingDatabaseIsRefused() {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
    String why = refusal(JournalDatabases.single("ledger", a));
    assertEquals(true, why.contains("database 0 of 1 (" + a.jdbcUrl() + ") says it is database 0 of 2 of "
        + "deployment [ledger]"), why);
  }

  @Test
  void anAddedDatabaseIsRefusedAndRecordsNothing() {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabase c = fresh();
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
    String why = refusal(JournalDatabases.of("ledger", List.of(a, b, c)));
    assertEquals(true, why.contains("database 2 of 3 (" + c.jdbcUrl() + ") records no identity"), why);
    assertEquals(true, why.contains("database 0 of 3 (" + a.jdbcUrl() + ") says it is database 0 of 2"), why);
    assertEquals(Optional.empty(), identity(c), "a refused start recorded an identity");
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
  }

  @Test
  void anotherDeploymentsDatabaseIsRefused() {
    JournalDatabase a = fresh();
    JournalDatabases.single("orders", a).verifyIdentities();
    String why = refusal(JournalDatabases.single("ledger", a));
    assertEquals(true, why.contains("says it is database 0 of 1 of deployment [orders]"), why);
  }

  @Test
  void anEmptyDatabaseInPlaceOfOneWithHistoryIsRefused() throws SQLException {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
    journalEntry(a);
    JournalDatabase emptyB = fresh();
    String why = refusal(JournalDatabases.of("ledger", List.of(a, emptyB)));
    assertEquals(true, why.startsWith("[ledger] journal databases refused: a database records no identity while the "
        + "deployment already has journal entries (a database replaced by an empty one, or added without moving "
        + "histories into it): database 0 of 2 (" + a.jdbcUrl() + ") says it is database 0 of 2 of deployment "
        + "[ledger]; database 1 of 2 (" + emptyB.jdbcUrl() + ") records no identity."), why);
    assertEquals(Optional.empty(), identity(emptyB));
  }

  @Test
  void aSingleDatabaseWithHistoryButNoIdentityIsRecorded() throws SQLException {
    JournalDatabase a = fresh();
    journalEntry(a);
    JournalDatabases.single("ledger", a).verifyIdentities();
    assertEquals(Optional.of(new JournalIdentity("ledger", 0, 1)), identity(a));
  }

  @Test
  void nodesStartingTogetherAgree() throws Exception {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<CompletableFuture<Void>> starts = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        starts.add(CompletableFuture.runAsync(() -> JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities(),
            pool));
      }
      CompletableFuture.allOf(starts.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
    assertEquals(Optional.of(new JournalIdentity("ledger", 1, 2)), identity(b));
  }

  @Test
  void twoListsSharingDatabaseZeroCannotBothPassAndTheRefusedOneLeavesNoClaim() throws SQLException {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabase c = fresh();
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
    String why = refusal(JournalDatabases.of("ledger", List.of(a, c)));
    assertEquals(true, why.contains("database 0 lists other databases as the deployment's"), why);
    assertEquals(Optional.empty(), identity(c), "the refused list's claim of c was undone");
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
  }

  @Test
  void twoListsSharingOnlyTheirLastDatabaseCannotBothPass() {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabase c = fresh();
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
    String why = refusal(JournalDatabases.of("ledger", List.of(c, b)));
    assertEquals(true, why.contains("database 1 lists other databases as the deployment's"), why);
    assertEquals(Optional.empty(), identity(c), "the refused list's claim of c was undone");
  }

  /**
   * Three lists of deployment [ledger] interleave: R = [d0, d1] claims both; just before R registers on
   * d0, W = [d0, d2] (finding d0 claimed by R) claims d2 and registers on d0; just before W registers on
   * d2, X = [d3, d2] claims d3, registers on d3 and d2, and passes. W is refused on d2, and must not leave
   * its list registered on d0 (R's claim, which W's release keeps): R passes, and W stays refused.
   */
  @Test
  void aRefusedStartLeavesNoRegistrationThatBlocksTheRightList() {
    JournalDatabase d0 = fresh();
    JournalDatabase d1 = fresh();
    JournalDatabase d2 = fresh();
    JournalDatabase d3 = fresh();
    JournalDatabases r = JournalDatabases.of("ledger", List.of(d0, d1));
    JournalDatabases w = JournalDatabases.of("ledger", List.of(d0, d2));
    JournalDatabases x = JournalDatabases.of("ledger", List.of(d3, d2));
    AtomicBoolean xPassed = new AtomicBoolean();
    AtomicReference<String> wRefused = new AtomicReference<>();
    JournalLayoutException rRefused = null;
    try {
      r.verifyIdentities(i -> {
        if (i == 0) {
          wRefused.set(assertThrows(JournalLayoutException.class, () -> w.verifyIdentities(j -> {
            if (j == 1) {
              x.verifyIdentities();
              xPassed.set(true);
            }
          })).getMessage());
        }
      });
    } catch (JournalLayoutException e) {
      rRefused = e;
    }
    assertEquals(true, xPassed.get(), "X ran inside W's registration and passed");
    assertEquals(true, wRefused.get() != null && wRefused.get().contains("database 1 lists other databases as the "
        + "deployment's"), String.valueOf(wRefused.get()));
    String rFirst = rRefused == null ? "passed" : rRefused.getMessage();
    // R's first call passes once W undid its registration on d0; at the latest a restart of R must pass.
    assertDoesNotThrow(() -> JournalDatabases.of("ledger", List.of(d0, d1)).verifyIdentities(),
        "R's list is refused for good (its first call: " + rFirst + ")");
    String rList = recorded(d0).member() + "," + recorded(d1).member();
    assertEquals(rList, recorded(d0).members(), "R's list is registered on d0");
    assertEquals(rList, recorded(d1).members(), "R's list is registered on d1");
    String why = refusal(JournalDatabases.of("ledger", List.of(d0, d2)));
    assertEquals(true, why.contains("database 0 lists other databases as the deployment's"), why);
    JournalDatabases.of("ledger", List.of(d3, d2)).verifyIdentities();
    String xList = recorded(d3).member() + "," + recorded(d2).member();
    assertEquals(xList, recorded(d2).members(), "X's list is registered on d2");
  }

  /**
   * A refused call undoes only a registration that still carries its token: a twin with the same list
   * that registered after it (and passed) keeps its registration.
   */
  @Test
  void aRefusedCallDoesNotUndoATwinsRegistrationOfTheSameList() throws SQLException {
    JournalDatabase db = fresh();
    try (Connection c = db.connect()) {
      JournalIdentities.claim(c, new JournalIdentity("ledger", 0, 2), "m0");
      String list = "m0,m1";
      assertEquals(list, JournalIdentities.register(c, list, "m0"));
      assertEquals(list, JournalIdentities.register(c, list, "m0"), "the twin's same list passes");
      JournalIdentities.unregister(c, list);
      assertEquals(list, JournalIdentities.read(c).orElseThrow().members(), "one refused twin leaves the other's");
      assertEquals(list, JournalIdentities.register(c, "m0,m9", "m0"), "another list is refused");
      JournalIdentities.unregister(c, "m0,m9");
      assertEquals(list, JournalIdentities.read(c).orElseThrow().members(), "a refused list takes back nothing");
      JournalIdentities.unregister(c, list);
      assertEquals("", JournalIdentities.read(c).orElseThrow().members(), "the last registrant's undo removes it");
      assertEquals("", JournalIdentities.register(c, "m9,m1", "m9"), "a list computed from another member id "
          + "registers nothing");
    }
  }

  @Test
  void eachDatabaseRepeatsItsIdentityInItsJournal() throws SQLException {
    JournalDatabase a = fresh();
    JournalDatabase b = fresh();
    JournalDatabases.of("ledger", List.of(a, b)).verifyIdentities();
    try (Connection c = b.connect(); Statement st = c.createStatement();
        java.sql.ResultSet rs = st.executeQuery("SELECT event_payload FROM event_journal WHERE persistence_id = '"
            + JournalIdentities.JOURNAL_ID + "'")) {
      assertEquals(true, rs.next());
      assertEquals(Optional.of(new JournalIdentity("ledger", 1, 2)), JournalIdentity.fromBytes(rs.getBytes(1)));
    }
  }

  /** The mapping is part of the data: these values must never change. */
  @Test
  void aPartitionMapsToTheDatabaseItsNameHashesTo() {
    int[] expected = new int[8];
    for (int p = 0; p < 8; p++) {
      expected[p] = Math.floorMod(("ledger|payments|" + p).hashCode(), 2);
    }
    assertEquals("[0, 1, 0, 1, 0, 1, 0, 1]", java.util.Arrays.toString(expected));
    JournalDatabases two = JournalDatabases.of("ledger", List.of(fresh(), fresh()));
    for (int p = 0; p < 8; p++) {
      assertEquals(expected[p], two.indexOf(new PartitionId("ledger", "payments", p)), "partition " + p);
    }
    assertEquals(0, new PartitionId("ledger", "payments", 5).journalDatabase(1));
  }

  @Test
  void aListIsRefusedWhenEmptyOrNamingADatabaseTwice() {
    JournalDatabase a = fresh();
    assertEquals("[ledger] needs at least one journal database",
        assertThrows(IllegalArgumentException.class, () -> JournalDatabases.of("ledger", List.of())).getMessage());
    assertEquals("[ledger] lists a journal database twice: [" + a.jdbcUrl() + ", " + a.jdbcUrl() + "]",
        assertThrows(IllegalArgumentException.class, () -> JournalDatabases.of("ledger", List.of(a, a)))
            .getMessage());
  }

  /**
   * A start that fails part-way (a database away while it registers) undoes what it wrote, as a
   * refused one does: its registration and claims do not block the right list afterwards.
   */
  @Test
  void aStartThatFailsPartWayLeavesNothingThatBlocksTheRightList() {
    JournalDatabase d0 = fresh();
    JournalDatabase d1 = fresh();
    JournalDatabase x = fresh();
    IllegalStateException away = assertThrows(IllegalStateException.class,
        () -> JournalDatabases.of("ledger", List.of(d0, x)).verifyIdentities(i -> {
          if (i == 1) {
            throw new IllegalStateException("cannot record the journal identity of [x]: connection refused");
          }
        }));
    assertEquals("cannot record the journal identity of [x]: connection refused", away.getMessage());
    assertEquals("", recordedMembers(d0), "its registration on d0 taken back");
    JournalDatabases.of("ledger", List.of(d0, d1)).verifyIdentities();
  }

  private static String recordedMembers(JournalDatabase db) {
    try (Connection c = db.connect()) {
      return JournalIdentities.read(c).map(JournalIdentities.Recorded::members).orElse("");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Optional<JournalIdentity> identity(JournalDatabase db) {
    try (Connection c = db.connect()) {
      return JournalIdentities.read(c).map(JournalIdentities.Recorded::identity);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static JournalIdentities.Recorded recorded(JournalDatabase db) {
    try (Connection c = db.connect()) {
      return JournalIdentities.read(c).orElseThrow();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void journalEntry(JournalDatabase db) throws SQLException {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("INSERT INTO \"event_journal\" (\"persistence_id\", \"sequence_number\", \"writer\", "
          + "\"write_timestamp\", \"adapter_manifest\", \"event_payload\", \"event_ser_id\", \"event_ser_manifest\") "
          + "VALUES ('fencepost|ledger|payments|0', 1, 'w', 0, '', X'00', 1, '')");
    }
  }
}
