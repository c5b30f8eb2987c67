package io.fencepost.internal;

import java.sql.SQLException;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;

/**
 * Recognises a write that a journal database refused because the partition's history no longer lives
 * there: once a journal move has marked a database, its fence (a trigger on the journal and on the
 * projections' positions) refuses every write of a partition that the database's recorded place in
 * the list does not map to it, with SQLSTATE {@value #SQL_STATE} and a message naming the persistence
 * id in brackets. Such a writer uses an old list of databases; it must halt, never retry.
 */
public final class JournalFenceRefusal {

  /** The SQLSTATE the fence raises (class {@code FP}: Fencepost's own). */
  public static final String SQL_STATE = "FP001";

  private JournalFenceRefusal() {
  }

  /**
   * The fence's message when {@code failure} (anywhere in its causes, or an {@link SQLException}'s
   * chained exceptions: a JDBC batch reports its entry's error there) is its refusal of a write of
   * {@code persistenceId}.
   */
  public static Optional<String> in(Throwable failure, String persistenceId) {
    Set<Throwable> seen = new HashSet<>();
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof SQLException sql) {
        int chained = 0;
        for (SQLException e = sql; e != null && chained++ < 100; e = e.getNextException()) {
          if (SQL_STATE.equals(e.getSQLState()) && e.getMessage() != null
              && e.getMessage().contains("[" + persistenceId + "]")) {
            return Optional.of(e.getMessage());
          }
        }
      }
    }
    return Optional.empty();
  }
}
