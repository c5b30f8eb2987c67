package io.fencepost.internal;

import java.sql.SQLException;
import java.util.HashSet;
import java.util.Set;

/**
 * Recognises a journal write refused by the database's unique key: SQLSTATE {@code 23505}
 * (unique_violation in PostgreSQL, "unique index or primary key violation" in H2), anywhere in a
 * failure's causes or an {@link SQLException}'s chained exceptions (a JDBC batch reports its
 * entry's error there).
 */
public final class UniqueKeyViolation {

  private static final String UNIQUE_VIOLATION = "23505";

  private UniqueKeyViolation() {
  }

  public static boolean in(Throwable failure) {
    Set<Throwable> seen = new HashSet<>();
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof SQLException sql) {
        int chained = 0;
        for (SQLException e = sql; e != null && chained++ < 100; e = e.getNextException()) {
          if (UNIQUE_VIOLATION.equals(e.getSQLState())) {
            return true;
          }
        }
      }
    }
    return false;
  }
}
