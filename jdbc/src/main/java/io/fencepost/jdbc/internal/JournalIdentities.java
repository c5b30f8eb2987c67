package io.fencepost.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.Optional;

import io.fencepost.annotation.InternalApi;

/**
 * INTERNAL API: the identity each journal database records, one row in
 * {@code fencepost_journal_identity}: which database of which deployment it is.
 */
@InternalApi
public final class JournalIdentities {

  /** The longest deployment name the table holds. */
  public static final int MAX_DEPLOYMENT_LENGTH = 200;

  public static final String TABLE = "fencepost_journal_identity";
  /** A PostgreSQL and H2 unique-key violation. */
  private static final String UNIQUE_VIOLATION = "23505";

  /** Database {@code index} of {@code count} of {@code deployment}. */
  public record Identity(String deployment, int index, int count) {
  }

  private JournalIdentities() {
  }

  /** What the database records (creating the table when missing); empty when nothing. */
  public static Optional<Identity> read(Connection c) throws SQLException {
    createTable(c);
    return readRow(c);
  }

  /** What the database records, without creating anything; empty when nothing. */
  public static Optional<Identity> readIfRecorded(Connection c) throws SQLException {
    return SqlScripts.tableExists(c, TABLE) ? readRow(c) : Optional.empty();
  }

  /**
   * Records {@code identity}, unless another node recorded one first: returns what the database
   * records afterwards (the caller compares it with what it expected).
   */
  public static Identity claim(Connection c, Identity identity) throws SQLException {
    createTable(c);
    try (PreparedStatement st = c.prepareStatement("INSERT INTO " + TABLE
        + " (singleton, deployment, database_index, database_count, claimed_at) VALUES (0, ?, ?, ?, ?)")) {
      st.setString(1, identity.deployment());
      st.setInt(2, identity.index());
      st.setInt(3, identity.count());
      st.setString(4, Instant.now().toString());
      st.executeUpdate();
    } catch (SQLException e) {
      if (!UNIQUE_VIOLATION.equals(e.getSQLState())) {
        throw e;
      }
      // another node claimed it meanwhile: what it recorded stands
    }
    return readRow(c).orElseThrow(() -> new SQLException("no identity row after claiming one"));
  }

  /** Whether the database holds any journal entry. */
  public static boolean holdsJournalEntries(Connection c) throws SQLException {
    if (!SqlScripts.tableExists(c, "event_journal")) {
      return false;
    }
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT 1 FROM event_journal LIMIT 1")) {
      return rs.next();
    }
  }

  private static void createTable(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      st.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (singleton INT NOT NULL PRIMARY KEY CHECK (singleton = 0), "
          + "deployment VARCHAR(" + MAX_DEPLOYMENT_LENGTH + ") NOT NULL, database_index INT NOT NULL, "
          + "database_count INT NOT NULL, claimed_at VARCHAR(64) NOT NULL)");
    }
  }

  private static Optional<Identity> readRow(Connection c) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
        "SELECT deployment, database_index, database_count FROM " + TABLE + " WHERE singleton = 0")) {
      return rs.next() ? Optional.of(new Identity(rs.getString(1), rs.getInt(2), rs.getInt(3))) : Optional.empty();
    }
  }
}
