package io.fencepost.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Instant;
import java.util.Optional;

import io.fencepost.JournalIdentity;
import io.fencepost.annotation.InternalApi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * INTERNAL API: the identity each journal database records: which database of which deployment it is.
 *
 * <p>Twice: a row in {@code fencepost_journal_identity}, which the list a node is given is checked
 * against before it starts, and an entry of persistence id {@value #JOURNAL_ID} in the journal
 * itself, which each pipeline reads back through the journal plugin it will write with (so a plugin
 * pointed at another database than the list says, or a partition count that differs from the list's,
 * is caught where it matters). Each database also has a random member id, and every database of a
 * list registers the member ids of all, counting the starts that registered it: two nodes given
 * lists that share a database cannot both pass, and a refused start takes back its own registrations
 * (a list stays registered while any start that registered it has not taken it back: a node that
 * passed never does).
 */
@InternalApi
public final class JournalIdentities {

  /** The longest deployment name the table holds. */
  public static final int MAX_DEPLOYMENT_LENGTH = 200;

  public static final String TABLE = "fencepost_journal_identity";
  /** The persistence id of the journal entry that repeats the identity. */
  public static final String JOURNAL_ID = JournalIdentity.PERSISTENCE_ID;
  /** Pekko's ByteArraySerializer: the journal entry's payload is the identity's text. */
  private static final int BYTES_SERIALIZER = 4;
  /** PostgreSQL: the user may not call a function, or the function does not exist. */
  private static final String INSUFFICIENT_PRIVILEGE = "42501";
  private static final String UNDEFINED_FUNCTION = "42883";
  private static final Logger log = LoggerFactory.getLogger(JournalIdentities.class);
  /** A PostgreSQL and H2 unique-key violation. */
  private static final String UNIQUE_VIOLATION = "23505";

  /**
   * What a database records: its identity, its member id, the member ids of its list (or ""), the
   * place the identity was recorded in ({@link #placeOf}, "" where the database cannot tell), and the
   * member id it had as a copy before it was adopted (""), with {@code here}, the place of the
   * database it was read from.
   */
  public record Recorded(JournalIdentity identity, String member, String members, String place, String adoptedFrom,
      String here) {

    /**
     * Whether the identity was recorded in another database than the one it was read from: this one
     * is a copy (a restore, a clone, a database created from it as a template) of that one.
     */
    public boolean copied() {
      return !place.isEmpty() && !here.isEmpty() && !place.equals(here);
    }

    @Override
    public String toString() {
      return identity.toString();
    }
  }

  private JournalIdentities() {
  }

  /** What the database records (creating the table when missing); empty when nothing. */
  public static Optional<Recorded> read(Connection c) throws SQLException {
    createTableIfMissing(c);
    return readRow(c);
  }

  /** What the database records, without creating anything; empty when nothing. */
  public static Optional<Recorded> readIfRecorded(Connection c) throws SQLException {
    return SqlScripts.tableExists(c, TABLE) ? readRow(c) : Optional.empty();
  }

  /**
   * Records {@code identity} with member id {@code member} (and its journal entry), unless another
   * node recorded one first: returns what the database records afterwards (the caller compares it
   * with what it expected, and the member id with its own to know whether the claim is its).
   */
  public static Recorded claim(Connection c, JournalIdentity identity, String member) throws SQLException {
    createTableIfMissing(c);
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(false);
    try {
      insert(c, identity, member, "");
      c.commit();
    } catch (SQLException e) {
      c.rollback();
      if (!UNIQUE_VIOLATION.equals(e.getSQLState()) || readRow(c).isEmpty()) {
        throw e;   // (a journal entry without its identity row is not another node's claim)
      }
      // another node claimed it meanwhile: what it recorded stands
    } finally {
      c.setAutoCommit(autoCommit);
    }
    return readRow(c).orElseThrow(() -> new SQLException("no identity row after claiming one"));
  }

  /**
   * Undoes this node's claim ({@code member}) while no list is registered on it and the database holds
   * no history: a start refused after claiming leaves no trace (it undid its own registrations first),
   * and never removes a claim a list refers to, a twin start's with the same list included.
   */
  public static void release(Connection c, String member) throws SQLException {
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(false);
    try {
      if (!holdsJournalEntries(c)) {
        try (PreparedStatement st = c.prepareStatement("DELETE FROM " + TABLE + " WHERE member = ? "
            + "AND (members IS NULL OR members = '')")) {
          st.setString(1, member);
          if (st.executeUpdate() > 0) {
            deleteJournalEntry(c);
          }
        }
      }
      c.commit();
    } catch (SQLException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(autoCommit);
    }
  }

  /**
   * Registers {@code members} (the member ids of the whole list, in order) on the row of member id
   * {@code member} (the one the list was computed from) unless another list is registered, counting
   * this start among its registrants; returns what is registered afterwards (this start counted
   * exactly when that is {@code members}). Every database of a list registers it, so two lists that
   * share any database cannot both pass.
   */
  public static String register(Connection c, String members, String member) throws SQLException {
    try (PreparedStatement st = c.prepareStatement("UPDATE " + TABLE + " SET registrants = CASE WHEN members = ? "
        + "THEN registrants + 1 ELSE 1 END, members = ? WHERE singleton = 0 AND member = ? AND (members IS NULL OR "
        + "members = '' OR members = ?)")) {
      st.setString(1, members);
      st.setString(2, members);
      st.setString(3, member);
      st.setString(4, members);
      st.executeUpdate();
    }
    return readRow(c).map(Recorded::members).orElse("");
  }

  /**
   * Takes back one registration of {@code members} (a refused start's own): the list stays registered
   * while another start that registered it (a twin with the same list, which may have passed) has not
   * taken its own back, and is removed with the last.
   */
  public static void unregister(Connection c, String members) throws SQLException {
    try (PreparedStatement st = c.prepareStatement("UPDATE " + TABLE + " SET members = CASE WHEN registrants <= 1 "
        + "THEN '' ELSE members END, registrants = CASE WHEN registrants <= 1 THEN 0 ELSE registrants - 1 END "
        + "WHERE singleton = 0 AND members = ?")) {
      st.setString(1, members);
      st.executeUpdate();
    }
  }

  /**
   * Records {@code identity}, {@code member} and {@code members} in place of whatever the database
   * records, with its journal entry, in the caller's transaction (a move of histories; the table
   * exists: H2 commits the open transaction on DDL). A list it records counts as registered once (by
   * the move itself, which never takes it back).
   */
  public static void replace(Connection c, JournalIdentity identity, String member, String members) throws SQLException {
    // In place when there is a row: on H2 the journal fence's writers wait on that row's lock, and must
    // find it (with the new place) when the move commits.
    try (PreparedStatement st = c.prepareStatement("UPDATE " + TABLE + " SET deployment = ?, database_index = ?, "
        + "database_count = ?, moving = ?, member = ?, members = ?, registrants = ?, claimed_at = ?, "
        + "place = CASE WHEN ? = '' THEN place ELSE ? END WHERE singleton = 0")) {
      st.setString(1, identity.deployment());
      st.setInt(2, identity.index());
      st.setInt(3, identity.count());
      st.setInt(4, identity.moving() ? 1 : 0);
      st.setString(5, member);
      st.setString(6, members);
      st.setInt(7, members.isEmpty() ? 0 : 1);
      st.setString(8, Instant.now().toString());
      String here = placeOf(c);   // "" (cannot tell) never erases a recorded place
      st.setString(9, here);
      st.setString(10, here);
      if (st.executeUpdate() > 0) {
        deleteJournalEntry(c);
        insertJournalEntry(c, identity);
        return;
      }
    }
    deleteJournalEntry(c);
    insert(c, identity, member, members);
  }

  /** Removes what the database records (identity row and journal entry), in the caller's transaction. */
  public static void erase(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.executeUpdate("DELETE FROM " + TABLE);
    }
    deleteJournalEntry(c);
  }

  private static void insert(Connection c, JournalIdentity identity, String member, String members) throws SQLException {
    try (PreparedStatement st = c.prepareStatement("INSERT INTO " + TABLE + " (singleton, deployment, database_index, "
        + "database_count, moving, member, members, registrants, claimed_at, place) VALUES (0, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
      st.setString(1, identity.deployment());
      st.setInt(2, identity.index());
      st.setInt(3, identity.count());
      st.setInt(4, identity.moving() ? 1 : 0);
      st.setString(5, member);
      st.setString(6, members);
      st.setInt(7, members.isEmpty() ? 0 : 1);
      st.setString(8, Instant.now().toString());
      st.setString(9, placeOf(c));
      st.executeUpdate();
    }
    insertJournalEntry(c, identity);
  }

  private static void insertJournalEntry(Connection c, JournalIdentity identity) throws SQLException {
    if (!SqlScripts.tableExists(c, "event_journal")) {
      throw new SQLException("the journal's tables are missing: install the schema first "
          + "(JournalDatabase.installSchemaIfMissing, or fencepost ledger --install-schema)");
    }
    try (PreparedStatement st = c.prepareStatement("INSERT INTO event_journal (persistence_id, sequence_number, "
        + "deleted, writer, write_timestamp, adapter_manifest, event_ser_id, event_ser_manifest, event_payload) "
        + "VALUES (?, 1, FALSE, 'fencepost', ?, '', ?, '', ?)")) {
      st.setString(1, JOURNAL_ID);
      st.setLong(2, System.currentTimeMillis());
      st.setInt(3, BYTES_SERIALIZER);
      st.setBytes(4, identity.toBytes());
      st.executeUpdate();
    }
  }

  private static void deleteJournalEntry(Connection c) throws SQLException {
    if (SqlScripts.tableExists(c, "event_journal")) {
      try (PreparedStatement st = c.prepareStatement("DELETE FROM event_journal WHERE persistence_id = ?")) {
        st.setString(1, JOURNAL_ID);
        st.executeUpdate();
      }
    }
  }

  /** Whether the database holds any journal entry besides its identity's. */
  public static boolean holdsJournalEntries(Connection c) throws SQLException {
    if (!SqlScripts.tableExists(c, "event_journal")) {
      return false;
    }
    try (PreparedStatement st = c.prepareStatement(
        "SELECT 1 FROM event_journal WHERE persistence_id <> ? LIMIT 1")) {
      st.setString(1, JOURNAL_ID);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next();
      }
    }
  }

  /**
   * Where the database lives, as far as it can tell: on PostgreSQL its server's system identifier
   * (chosen at initdb, new after a dump restored elsewhere or a pg_upgrade, but kept by every
   * physical copy of the server: a base backup, a point-in-time or storage-snapshot restore, a
   * promoted standby) and the database's oid (new for a database created from it as a template, or
   * restored into another database by a dump); "" elsewhere (H2), or where the server does not let
   * the user call {@code pg_control_system()} (said at WARN).
   */
  public static String placeOf(Connection c) throws SQLException {
    if (!"PostgreSQL".equals(c.getMetaData().getDatabaseProductName())) {
      return "";
    }
    boolean autoCommit = c.getAutoCommit();
    Savepoint before = autoCommit ? null : c.setSavepoint();
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT (SELECT system_identifier FROM "
        + "pg_control_system()), (SELECT oid FROM pg_database WHERE datname = current_database())")) {
      rs.next();
      return "system " + rs.getLong(1) + " database oid " + rs.getLong(2);
    } catch (SQLException e) {
      if (before != null) {
        c.rollback(before);   // a refused function must not abort the caller's transaction
      }
      if (!INSUFFICIENT_PRIVILEGE.equals(e.getSQLState()) && !UNDEFINED_FUNCTION.equals(e.getSQLState())) {
        throw e;
      }
      log.warn("the journal database cannot tell where it is ({}): a copy of it beside the original will not be "
          + "refused; GRANT EXECUTE ON FUNCTION pg_control_system() to the journal's user", e.getMessage());
      return "";
    }
  }

  /**
   * Makes this database, a copy whose original is gone, the one its identity says, under member id
   * {@code member} (a new one: the original's id stays the original's, so that the list registered
   * afterwards refuses it) and at its own place {@code here}; the id it had is kept as the one it was
   * adopted from.
   */
  public static void adopt(Connection c, String member, String here) throws SQLException {
    try (PreparedStatement st = c.prepareStatement("UPDATE " + TABLE + " SET adopted_from = member, member = ?, "
        + "place = ? WHERE singleton = 0")) {
      st.setString(1, member);
      st.setString(2, here);
      st.executeUpdate();
    }
  }

  /**
   * Registers {@code members} as the deployment's list on this database, counted once and never
   * taken back (an adoption's, like a move's), whatever was registered before.
   */
  public static void registerAdopted(Connection c, String members) throws SQLException {
    try (PreparedStatement st = c.prepareStatement("UPDATE " + TABLE + " SET members = ?, registrants = 1 "
        + "WHERE singleton = 0")) {
      st.setString(1, members);
      st.executeUpdate();
    }
  }

  /** Creates the identity table unless it exists. */
  public static void createTableIfMissing(Connection c) throws SQLException {
    SqlScripts.createTable(c, TABLE, "CREATE TABLE IF NOT EXISTS " + TABLE + " (singleton INT NOT NULL PRIMARY KEY "
        + "CHECK (singleton = 0), deployment VARCHAR(" + MAX_DEPLOYMENT_LENGTH + ") NOT NULL, database_index INT NOT "
        + "NULL, database_count INT NOT NULL, moving INT NOT NULL, member VARCHAR(36) NOT NULL, members VARCHAR(4000), "
        + "registrants INT DEFAULT 0 NOT NULL, claimed_at VARCHAR(64) NOT NULL, place VARCHAR(100) DEFAULT '' NOT NULL, "
        + "adopted_from VARCHAR(36) DEFAULT '' NOT NULL)");
  }

  private static Optional<Recorded> readRow(Connection c) throws SQLException {
    String here = placeOf(c);
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT deployment, database_index, "
        + "database_count, moving, member, members, place, adopted_from FROM " + TABLE + " WHERE singleton = 0")) {
      if (!rs.next()) {
        return Optional.empty();
      }
      JournalIdentity id = new JournalIdentity(rs.getString(1), rs.getInt(2), rs.getInt(3), rs.getInt(4) != 0);
      String members = rs.getString(6);
      return Optional.of(new Recorded(id, rs.getString(5), members == null ? "" : members, rs.getString(7),
          rs.getString(8), here));
    }
  }
}
