package io.fencepost.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Reclaims journal space without weakening the fence.
 *
 * <p>pekko-persistence-jdbc's own event deletion ({@code deleteMessagesTo}) removes rows, which frees
 * their {@code (persistence_id, sequence_number)} keys: a stale incarnation that recovered before
 * the deleted range could then commit a write into it, and its effects would count. Compaction
 * keeps every row and its key, so any such write still collides, and only empties the payload of
 * events already covered by the partition's newest snapshot (marking them deleted, so recovery
 * starts from that snapshot and never replays them).
 */
public final class JournalCompaction {

  private JournalCompaction() {
  }

  /**
   * Empties the payloads of events at or below the newest snapshot of {@code persistenceId}.
   *
   * @return how many events were compacted (0 when there is no snapshot)
   */
  public static int compact(JournalDatabase db, String persistenceId) {
    try (Connection c = db.connect()) {
      long upTo;
      try (PreparedStatement st = c.prepareStatement(
          "SELECT MAX(sequence_number) FROM snapshot WHERE persistence_id = ?")) {
        st.setString(1, persistenceId);
        try (ResultSet rs = st.executeQuery()) {
          rs.next();
          upTo = rs.getLong(1);
          if (rs.wasNull()) {
            return 0;
          }
        }
      }
      try (PreparedStatement st = c.prepareStatement("UPDATE event_journal SET deleted = TRUE, event_payload = ? "
          + "WHERE persistence_id = ? AND sequence_number <= ? AND deleted = FALSE")) {
        st.setBytes(1, new byte[0]);
        st.setString(2, persistenceId);
        st.setLong(3, upTo);
        return st.executeUpdate();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot compact the journal of [" + persistenceId + "] on ["
          + db.jdbcUrl() + "]: " + e.getMessage(), e);
    }
  }
}
