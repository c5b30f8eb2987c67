package io.fencepost.internal;

import java.sql.SQLException;
import java.util.HashSet;
import java.util.Set;

/**
 * Recognises a journal write refused by the database's unique key on a given persistence id:
 * SQLSTATE {@code 23505} (unique_violation in PostgreSQL, "unique index or primary key violation" in
 * H2), anywhere in a failure's causes or an {@link SQLException}'s chained exceptions (a JDBC batch
 * reports its entry's error there), whose message names that persistence id. The journal writes the
 * rows of several actors in one transaction, so when one row is refused every actor of the batch
 * sees the same failure: only the one whose key is named lost to another incarnation.
 */
public final class UniqueKeyViolation {

  private static final String UNIQUE_VIOLATION = "23505";

  private UniqueKeyViolation() {
  }

  public static boolean in(Throwable failure, String persistenceId) {
    Set<Throwable> seen = new HashSet<>();
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof SQLException sql) {
        int chained = 0;
        for (SQLException e = sql; e != null && chained++ < 100; e = e.getNextException()) {
          if (UNIQUE_VIOLATION.equals(e.getSQLState()) && names(e.getMessage(), persistenceId)) {
            return true;
          }
        }
      }
    }
    return false;
  }

  /**
   * PostgreSQL's detail names the refused key: {@code Key (persistence_id, sequence_number)=(pid, n)
   * already exists}; H2 quotes the refused values: {@code VALUES ( ... 'pid', n )}.
   */
  private static boolean names(String message, String persistenceId) {
    return message != null
        && (message.contains("=(" + persistenceId + ", ") || message.contains("'" + persistenceId + "'"));
  }
}
