package io.fencepost.jdbc.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/** Runs SQL scripts shipped as classpath resources, one statement at a time with auto-commit. */
public final class SqlScripts {

  /** What a session losing a concurrent {@code CREATE TABLE IF NOT EXISTS} gets: unique key, duplicate object or table. */
  private static final Set<String> RACED = Set.of("23505", "42710", "42P07");

  private SqlScripts() {
  }

  /** Runs every statement of the script; the first failing statement aborts with its text in the message. */
  public static void run(Connection connection, String resource) throws SQLException {
    boolean autoCommit = connection.getAutoCommit();
    connection.setAutoCommit(true);
    try (Statement st = connection.createStatement()) {
      for (String sql : statements(load(resource))) {
        try {
          st.execute(sql);
        } catch (SQLException e) {
          throw new SQLException("statement of " + resource + " failed: [" + sql + "]: " + e.getMessage(),
              e.getSQLState(), e);
        }
      }
    } finally {
      connection.setAutoCommit(autoCommit);
    }
  }

  /**
   * Runs {@code createIfNotExists} (a {@code CREATE TABLE IF NOT EXISTS}), tolerating another session
   * that creates {@code table} at the same moment: PostgreSQL's {@code IF NOT EXISTS} is not safe
   * against that race (nodes starting together). The loser waits for the winner's commit and then
   * fails on the catalog's unique key ({@code 23505}) or finds the row type or table already there
   * ({@code 42710}, {@code 42P07}); the table exists by then, which is all the caller asked for.
   */
  public static void createTable(Connection connection, String table, String createIfNotExists) throws SQLException {
    try (Statement st = connection.createStatement()) {
      st.execute(createIfNotExists);
    } catch (SQLException e) {
      if (!RACED.contains(e.getSQLState()) || !connection.getAutoCommit() || !tableExists(connection, table)) {
        throw e;
      }
    }
  }

  /** Whether a table of this name exists (any case). */
  public static boolean tableExists(Connection connection, String table) throws SQLException {
    DatabaseMetaData md = connection.getMetaData();
    for (String name : new String[] {table, table.toUpperCase(Locale.ROOT)}) {
      try (ResultSet rs = md.getTables(null, null, name, new String[] {"TABLE"})) {
        if (rs.next()) {
          return true;
        }
      }
    }
    return false;
  }

  static String load(String resource) {
    try (InputStream in = SqlScripts.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("SQL script [" + resource + "] is not on the classpath; "
            + "is pekko-persistence-jdbc a dependency?");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read SQL script [" + resource + "]", e);
    }
  }

  /** Splits on semicolons that end a statement, dropping line comments and empty statements. */
  static List<String> statements(String script) {
    StringBuilder clean = new StringBuilder();
    for (String line : script.split("\n")) {
      String trimmed = line.strip();
      if (!trimmed.startsWith("--")) {
        clean.append(line).append('\n');
      }
    }
    List<String> out = new ArrayList<>();
    for (String part : clean.toString().split(";")) {
      String sql = part.strip();
      if (!sql.isEmpty()) {
        out.add(sql);
      }
    }
    return out;
  }
}
