package io.fencepost.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

import io.fencepost.PartitionId;
import io.fencepost.annotation.InternalApi;

/**
 * INTERNAL API: a partition's rows in a journal database, copied to another or deleted, for a move of
 * histories between databases: its journal, its snapshots and window segments, its outbox relay's
 * position and its projection positions. Each method works in the caller's transactions.
 */
@InternalApi
public final class HistoryRows {

  private static final String PREFIX = "fencepost|";
  private static final String WINDOW = "fencepost-window|";
  private static final String OUTBOX = "fencepost-outbox|";
  private static final String PROJECTIONS = "fencepost_projection_offsets";
  /** Generated keys, given anew by the database a row is copied into (nothing reads them by value). */
  private static final Set<String> GENERATED = Set.of("ordering", "global_offset");

  /** A table and the persistence ids of one partition's rows in it. */
  private record Part(String table, List<String> ids) {
  }

  private HistoryRows() {
  }

  /** The partitions that have rows in this database (journal, snapshots, relay positions). */
  public static Set<PartitionId> partitions(Connection c) throws SQLException {
    Set<PartitionId> out = new TreeSet<>((a, b) -> a.qualifiedName().compareTo(b.qualifiedName()));
    collect(c, "SELECT DISTINCT persistence_id FROM event_journal WHERE persistence_id LIKE 'fencepost|%'", "", out);
    collect(c, "SELECT DISTINCT persistence_id FROM snapshot WHERE persistence_id LIKE 'fencepost|%'", "", out);
    collect(c, "SELECT DISTINCT persistence_id FROM snapshot WHERE persistence_id LIKE 'fencepost-window|%'", WINDOW,
        out);
    collect(c, "SELECT persistence_id FROM durable_state WHERE persistence_id LIKE 'fencepost-outbox|%'", OUTBOX, out);
    return out;
  }

  private static void collect(Connection c, String sql, String prefix, Set<PartitionId> out) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      while (rs.next()) {
        parse(rs.getString(1).substring(prefix.length())).ifPresent(out::add);
      }
    }
  }

  /** The partition of a persistence id {@code fencepost|group|topic|partition}, if it is one. */
  static Optional<PartitionId> parse(String persistenceId) {
    if (!persistenceId.startsWith(PREFIX)) {
      return Optional.empty();
    }
    String[] parts = persistenceId.split("\\|", -1);
    if (parts.length != 4) {
      return Optional.empty();
    }
    try {
      return Optional.of(new PartitionId(parts[1], parts[2], Integer.parseInt(parts[3])));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  private static List<Part> parts(Connection c, PartitionId p) throws SQLException {
    String pid = p.persistenceId();
    List<Part> parts = new ArrayList<>(List.of(
        new Part("event_journal", List.of(pid)),
        new Part("snapshot", List.of(pid, WINDOW + pid)),
        new Part("durable_state", List.of(OUTBOX + pid))));
    if (SqlScripts.tableExists(c, PROJECTIONS)) {
      parts.add(new Part(PROJECTIONS, List.of(pid)));
    }
    return parts;
  }

  /**
   * Replaces partition {@code p}'s rows in {@code to} with those in {@code from}; returns how many rows
   * were copied. Refuses a partition with tagged events (Fencepost tags none; their tags would need
   * the new journal ordering).
   */
  public static long copy(Connection from, Connection to, PartitionId p) throws SQLException {
    try (PreparedStatement st = from.prepareStatement("SELECT count(*) FROM event_tag t JOIN event_journal j "
        + "ON t.event_id = j.ordering WHERE j.persistence_id = ?")) {
      st.setString(1, p.persistenceId());
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        if (rs.getLong(1) > 0) {
          throw new SQLException("the journal of " + p.qualifiedName() + " holds tagged events, which a move does "
              + "not carry; nothing was changed");
        }
      }
    }
    delete(to, p);
    long rows = 0;
    for (Part part : parts(from, p)) {
      for (String id : part.ids()) {
        rows += copyRows(from, to, part.table(), id);
      }
    }
    if (SqlScripts.tableExists(from, PROJECTIONS)) {
      rows += copyTopicRows(from, to, p);
    }
    return rows;
  }

  /**
   * A projection's row for the partition's topic ({@code fencepost|group|topic|}, position 0), which
   * holds compaction back for partitions the projection has not found yet: wherever the partition
   * goes, the row must be there too.
   */
  private static long copyTopicRows(Connection from, Connection to, PartitionId p) throws SQLException {
    String topicRow = PREFIX + p.group() + "|" + p.topic() + "|";
    long rows = 0;
    try (PreparedStatement read = from.prepareStatement("SELECT projection, seq FROM " + PROJECTIONS
        + " WHERE persistence_id = ?")) {
      read.setString(1, topicRow);
      try (ResultSet rs = read.executeQuery()) {
        while (rs.next()) {
          try (PreparedStatement write = to.prepareStatement("INSERT INTO " + PROJECTIONS + " (projection, "
              + "persistence_id, seq) SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM " + PROJECTIONS
              + " WHERE projection = ? AND persistence_id = ?)")) {
            write.setString(1, rs.getString(1));
            write.setString(2, topicRow);
            write.setLong(3, rs.getLong(2));
            write.setString(4, rs.getString(1));
            write.setString(5, topicRow);
            rows += write.executeUpdate();
          }
        }
      }
    }
    return rows;
  }

  /**
   * Creates, before the move's transactions (H2 commits an open transaction on DDL), the identity
   * table and the projections' table in every database (so that the {@link JournalFence} guards the
   * projections' positions from the start, even of a projection that has not run yet).
   */
  public static void createTables(List<Connection> connections) throws SQLException {
    for (Connection c : connections) {
      JournalIdentities.createTableIfMissing(c);
      SqlScripts.createTable(c, PROJECTIONS, ProjectionTables.CREATE_OFFSETS);
    }
  }

  /** Deletes partition {@code p}'s rows from this database. */
  public static void delete(Connection c, PartitionId p) throws SQLException {
    for (Part part : parts(c, p)) {
      for (String id : part.ids()) {
        try (PreparedStatement st = c.prepareStatement("DELETE FROM " + part.table() + " WHERE persistence_id = ?")) {
          st.setString(1, id);
          st.executeUpdate();
        }
      }
    }
  }

  private static long copyRows(Connection from, Connection to, String table, String persistenceId)
      throws SQLException {
    long rows = 0;
    try (PreparedStatement read = from.prepareStatement("SELECT * FROM " + table + " WHERE persistence_id = ?")) {
      read.setFetchSize(100);   // a cursor (the connection is in a transaction): not a whole history in memory
      read.setString(1, persistenceId);
      try (ResultSet rs = read.executeQuery()) {
        ResultSetMetaData md = rs.getMetaData();
        List<Integer> columns = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (int i = 1; i <= md.getColumnCount(); i++) {
          String name = md.getColumnName(i).toLowerCase(Locale.ROOT);
          if (!GENERATED.contains(name)) {
            columns.add(i);
            names.add(name);
          }
        }
        String insert = "INSERT INTO " + table + " (" + String.join(", ", names) + ") VALUES ("
            + String.join(", ", names.stream().map(n -> "?").toList()) + ")";
        try (PreparedStatement write = to.prepareStatement(insert)) {
          while (rs.next()) {
            for (int k = 0; k < columns.size(); k++) {
              int col = columns.get(k);
              if (binary(md.getColumnType(col))) {
                write.setBytes(k + 1, rs.getBytes(col));
              } else {
                write.setObject(k + 1, rs.getObject(col));
              }
            }
            write.addBatch();
            if (++rows % 500 == 0) {
              write.executeBatch();
            }
          }
          write.executeBatch();
        }
      }
    }
    return rows;
  }

  private static boolean binary(int type) {
    return type == Types.BINARY || type == Types.VARBINARY || type == Types.LONGVARBINARY || type == Types.BLOB;
  }

  /**
   * Takes the identity table for this transaction, waiting for every writer in flight (the
   * {@link JournalFence} holds it, or on H2 its row, until the writer commits): a node that starts,
   * and a write that comes, meanwhile wait for the move's mark and then read it.
   */
  public static void lockIdentity(Connection c) throws SQLException {
    try (Statement st = c.createStatement()) {
      if (postgres(c)) {
        st.execute("LOCK TABLE " + JournalIdentities.TABLE + " IN ACCESS EXCLUSIVE MODE");
      } else {
        st.executeQuery("SELECT singleton FROM " + JournalIdentities.TABLE + " FOR UPDATE").close();
      }
    }
  }

  /**
   * "{@code <url>} has N other session(s)" for each database of {@code connections} (whose URLs are
   * {@code urls}, in the same order) that has sessions besides the given connection: a node runs, or
   * another tool.
   */
  public static List<String> busy(List<Connection> connections, List<String> urls) throws SQLException {
    List<String> busy = new ArrayList<>();
    for (int i = 0; i < connections.size(); i++) {
      int others = otherSessions(connections.get(i));
      if (others > 0) {
        busy.add(urls.get(i) + " has " + others + " other session(s)");
      }
    }
    return busy;
  }

  /** Sessions connected to this database other than {@code c}'s own. */
  public static int otherSessions(Connection c) throws SQLException {
    String sql = postgres(c)
        // backend_type is NULL for other roles' sessions unless the user may read all statistics
        ? "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            + "AND (backend_type = 'client backend' OR backend_type IS NULL)"
        : "SELECT count(*) FROM INFORMATION_SCHEMA.SESSIONS WHERE SESSION_ID <> SESSION_ID()";
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static boolean postgres(Connection c) throws SQLException {
    return c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT).contains("postgres");
  }
}
