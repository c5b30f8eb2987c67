package io.fencepost.examples;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.errors.RetriableException;
import io.fencepost.jdbc.JournalDatabase;

/**
 * An external store with a naturally idempotent, versioned write: a value is written only when its
 * version is newer than the stored one ({@code INSERT ... ON CONFLICT DO UPDATE ... WHERE version <
 * excluded.version}). Writing the same (entity, version, value) twice changes nothing, so an
 * at-least-once consumer may repeat it safely.
 */
public final class VersionedStore {

  private final JournalDatabase db;
  private final AtomicLong rawWrites = new AtomicLong();

  public VersionedStore(JournalDatabase db) {
    this.db = db;
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE IF NOT EXISTS counters (entity varchar(200) PRIMARY KEY, version bigint NOT NULL, "
          + "value bigint NOT NULL)");
    } catch (SQLException e) {
      throw new IllegalStateException("cannot create table counters on " + db.jdbcUrl() + ": " + e.getMessage(), e);
    }
  }

  /** Writes the value if its version is newer; returns whether it changed anything. */
  public boolean writeIfNewer(String entity, long version, long value) {
    rawWrites.incrementAndGet();
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement(
        "INSERT INTO counters (entity, version, value) VALUES (?, ?, ?) ON CONFLICT (entity) DO UPDATE "
            + "SET version = EXCLUDED.version, value = EXCLUDED.value WHERE counters.version < EXCLUDED.version")) {
      st.setString(1, entity);
      st.setLong(2, version);
      st.setLong(3, value);
      return st.executeUpdate() == 1;
    } catch (SQLException e) {
      throw new RetriableException("versioned write of [" + entity + "] v" + version + " failed: " + e.getMessage(), e);
    }
  }

  /** The stored (version, value) of an entity. */
  public Optional<long[]> read(String entity) {
    try (Connection c = db.connect();
        PreparedStatement st = c.prepareStatement("SELECT version, value FROM counters WHERE entity = ?")) {
      st.setString(1, entity);
      try (ResultSet rs = st.executeQuery()) {
        return rs.next() ? Optional.of(new long[] {rs.getLong(1), rs.getLong(2)}) : Optional.empty();
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Writes attempted, repeats included. */
  public long rawWrites() {
    return rawWrites.get();
  }
}
