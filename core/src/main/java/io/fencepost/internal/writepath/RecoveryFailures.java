package io.fencepost.internal.writepath;

import java.io.IOException;
import java.io.NotSerializableException;
import java.io.ObjectStreamException;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/**
 * Tells a recovery that can never succeed (a journal entry or snapshot that cannot be deserialized)
 * from one that fails while the database is away ({@link PartitionFailures} rate-limits the ERROR
 * of the first kind: a partition actor restarts with backoff after each failed recovery, as a new
 * instance).
 */
final class RecoveryFailures {

  private RecoveryFailures() {
  }

  /**
   * The deserialization failure in {@code failure}'s causes, or null when there is none or when the
   * database or the plugin failed (SQL, timeouts, an open circuit breaker: transient).
   */
  static Throwable undecodable(Throwable failure) {
    Throwable found = null;
    Set<Throwable> seen = new HashSet<>();
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof SQLException || t instanceof TimeoutException
          || t.getClass().getName().startsWith("org.apache.pekko.pattern.")) {   // AskTimeout, CircuitBreakerOpen
        return null;
      }
      if (found == null && decoding(t)) {
        found = t;
      }
    }
    return found;
  }

  /**
   * A serializer's refusal to read: Java and Jackson serialization errors, compression errors, and
   * what Pekko's Jackson serializer throws for a class it may not read (not bound, not allowed) or an
   * entry written by a newer migration version.
   */
  private static boolean decoding(Throwable t) {
    String type = t.getClass().getName();
    String message = String.valueOf(t.getMessage());
    return t instanceof NotSerializableException || t instanceof ObjectStreamException
        || t instanceof ClassNotFoundException || type.startsWith("com.fasterxml.jackson.")
        || (t instanceof IOException && (type.startsWith("java.io.") || type.startsWith("java.util.zip.")))
        || type.startsWith("net.jpountz.lz4.")
        || t instanceof IllegalArgumentException
        || (t instanceof IllegalStateException && message.contains("Migration version"));
  }
}
