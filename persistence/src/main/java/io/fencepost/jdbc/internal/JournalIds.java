package io.fencepost.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/** The persistence ids present in a journal's {@code event_journal} table. */
public final class JournalIds {

  /**
   * PostgreSQL: a loose index scan over the primary key {@code (persistence_id, sequence_number)}, one
   * index probe per distinct id, however many rows each journal holds (a plain {@code DISTINCT}
   * would read every row). Prefixes are matched here, not in SQL: the order of {@code '|'} under a
   * database's collation is not the order of the strings.
   */
  private static final String POSTGRES_WALK = "WITH RECURSIVE ids(pid) AS ("
      + "SELECT MIN(persistence_id) FROM event_journal "
      + "UNION ALL SELECT (SELECT MIN(e.persistence_id) FROM event_journal e WHERE e.persistence_id > ids.pid) "
      + "FROM ids WHERE ids.pid IS NOT NULL) SELECT pid FROM ids WHERE pid IS NOT NULL";
  /** H2 (the demo's journal): small enough for a plain scan. */
  private static final String H2_DISTINCT = "SELECT DISTINCT persistence_id FROM event_journal";

  private JournalIds() {
  }

  /**
   * Every persistence id of the journal that {@code connection} reaches and that starts with one of
   * {@code prefixes}, in the database's order.
   */
  public static List<String> withPrefixes(Connection connection, boolean postgres, List<String> prefixes)
      throws SQLException {
    List<String> out = new ArrayList<>();
    try (PreparedStatement st = connection.prepareStatement(postgres ? POSTGRES_WALK : H2_DISTINCT);
        ResultSet rs = st.executeQuery()) {
      while (rs.next()) {
        String pid = rs.getString(1);
        if (prefixes.stream().anyMatch(pid::startsWith)) {
          out.add(pid);
        }
      }
    }
    return out;
  }
}
