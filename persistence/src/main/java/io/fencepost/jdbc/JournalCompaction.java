package io.fencepost.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import io.fencepost.AppliedBatch;
import io.fencepost.OutboxRecord;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.apache.pekko.persistence.state.DurableStateStoreRegistry;
import org.apache.pekko.persistence.state.javadsl.DurableStateStore;
import org.apache.pekko.stream.javadsl.Sink;

/**
 * Reclaims journal space without weakening the fence and without taking anything from a reader.
 *
 * <p>pekko-persistence-jdbc's own event deletion ({@code deleteMessagesTo}) removes rows, which frees
 * their {@code (persistence_id, sequence_number)} keys: a stale incarnation that recovered before
 * the deleted range could then commit a write into it, and its effects would count. Compaction
 * keeps every row and its key, so any such write still collides, and only empties the payload of
 * events already covered by the partition's newest snapshot (marking them deleted, so recovery
 * starts from that snapshot and never replays them).
 *
 * <p>It never passes a reader of the journal: not the position of any {@link JdbcProjection} in
 * this database ({@code fencepost_projection_offsets}; a projection with positions for other
 * partitions of the same topic and group but none for this one counts as at 0), not the position
 * the partition's outbox relay
 * stored, and, where no relay stored a position, not the first entry that holds outbox records.
 * The result says which of them held it back. A reader that meets compacted entries it has not
 * consumed anyway (compacted by an older version, or by hand) stops there with a
 * {@link io.fencepost.errors.JournalGapException}.
 */
public final class JournalCompaction {

  private static final long READ_TIMEOUT_SECONDS = 60;

  private JournalCompaction() {
  }

  /**
   * What a compaction did.
   *
   * @param snapshotSequenceNr the newest snapshot's sequence number (0: none)
   * @param compactedUpTo events at or below this sequence number are compacted now
   * @param compacted how many events this call compacted
   * @param heldBackBy the readers that kept {@code compactedUpTo} below the snapshot, e.g.
   *     {@code projection [balances] at 12}; empty when the snapshot was the limit
   */
  public record Result(String persistenceId, long snapshotSequenceNr, long compactedUpTo, int compacted,
      List<String> heldBackBy) {
  }

  /**
   * Empties the payloads of events of {@code persistenceId} at or below its newest snapshot and
   * below every reader's position (see the class comment). The outbox relay's position is read from
   * {@code system}'s default durable state store ({@code pekko.persistence.state.plugin}).
   */
  public static Result compact(ActorSystem<?> system, JournalDatabase db, String persistenceId) {
    try (Connection c = db.connect()) {
      long snapshot = snapshotSequenceNr(c, persistenceId);
      long upTo = snapshot;
      List<String> heldBackBy = new ArrayList<>();
      for (var p : projectionPositions(c, persistenceId).entrySet()) {
        if (p.getValue() < upTo) {
          upTo = p.getValue();
          heldBackBy.add("projection [" + p.getKey() + "] at " + p.getValue());
        }
      }
      if (upTo > 0) {
        Optional<Long> relay = relayPosition(system, persistenceId);
        if (relay.isPresent() && relay.get() < upTo) {
          upTo = relay.get();
          heldBackBy.add("outbox relay at " + relay.get());
        } else if (relay.isEmpty()) {
          long firstOutbox = firstEntryWithOutbox(system, persistenceId, upTo);
          if (firstOutbox > 0) {
            upTo = firstOutbox - 1;
            heldBackBy.add("outbox records from entry " + firstOutbox + " on, and no relay position stored");
          }
        }
      }
      int compacted = 0;
      if (upTo > 0) {
        try (PreparedStatement st = c.prepareStatement("UPDATE event_journal SET deleted = TRUE, event_payload = ? "
            + "WHERE persistence_id = ? AND sequence_number <= ? AND deleted = FALSE")) {
          st.setBytes(1, new byte[0]);
          st.setString(2, persistenceId);
          st.setLong(3, upTo);
          compacted = st.executeUpdate();
        }
      }
      return new Result(persistenceId, snapshot, upTo, compacted, List.copyOf(heldBackBy));
    } catch (SQLException e) {
      throw new IllegalStateException("cannot compact the journal of [" + persistenceId + "] on ["
          + db.jdbcUrl() + "]: " + e.getMessage(), e);
    }
  }

  private static long snapshotSequenceNr(Connection c, String persistenceId) throws SQLException {
    try (PreparedStatement st = c.prepareStatement(
        "SELECT MAX(sequence_number) FROM snapshot WHERE persistence_id = ?")) {
      st.setString(1, persistenceId);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return rs.getLong(1);   // 0 when there is none
      }
    }
  }

  /** Every projection of this database with its position for the persistence id (0: none stored). */
  private static TreeMap<String, Long> projectionPositions(Connection c, String persistenceId) throws SQLException {
    TreeMap<String, Long> out = new TreeMap<>();
    if (!hasTable(c, "fencepost_projection_offsets")) {
      return out;
    }
    // Projections that read partitions of the same topic and consumer group: one that has not read
    // this partition yet reads it from its start.
    String topicPrefix = persistenceId.substring(0, persistenceId.lastIndexOf('|') + 1);
    try (PreparedStatement st = c.prepareStatement("SELECT projection, MAX(CASE WHEN persistence_id = ? THEN seq "
        + "ELSE 0 END) FROM fencepost_projection_offsets WHERE SUBSTR(persistence_id, 1, ?) = ? GROUP BY projection")) {
      st.setString(1, persistenceId);
      st.setInt(2, topicPrefix.length());
      st.setString(3, topicPrefix);
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.put(rs.getString(1), rs.getLong(2));
        }
      }
    }
    return out;
  }

  private static boolean hasTable(Connection c, String table) throws SQLException {
    for (String name : List.of(table, table.toUpperCase(java.util.Locale.ROOT))) {
      try (ResultSet rs = c.getMetaData().getTables(null, null, name, null)) {
        if (rs.next()) {
          return true;
        }
      }
    }
    return false;
  }

  private static Optional<Long> relayPosition(ActorSystem<?> system, String persistenceId) {
    DurableStateStore<Object> store = DurableStateStoreRegistry.get(system.classicSystem())
        .getDurableStateStoreFor(DurableStateStore.class, system.settings().config()
            .getString("pekko.persistence.state.plugin"));
    try {
      return store.getObject(OutboxRecord.relayPersistenceId(persistenceId)).toCompletableFuture()
          .get(READ_TIMEOUT_SECONDS, TimeUnit.SECONDS).value().map(v -> ((Number) v).longValue());
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the outbox relay's position of [" + persistenceId + "]: " + e, e);
    }
  }

  /** The first entry at or below {@code upTo} that holds outbox records (0: none). */
  private static long firstEntryWithOutbox(ActorSystem<?> system, String persistenceId, long upTo) {
    JdbcReadJournal journal = PersistenceQuery.get(system)
        .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
    try {
      List<EventEnvelope> first = journal.currentEventsByPersistenceId(persistenceId, 1, upTo)
          .filter(env -> AppliedBatch.from(env.event()).map(b -> !b.outbox().isEmpty()).orElse(false))
          .take(1)
          .runWith(Sink.seq(), system).toCompletableFuture().get(READ_TIMEOUT_SECONDS, TimeUnit.SECONDS);
      return first.isEmpty() ? 0 : first.get(0).sequenceNr();
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the journal of [" + persistenceId + "]: " + e, e);
    }
  }
}
