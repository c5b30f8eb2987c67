package io.fencepost.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

import io.fencepost.AppliedBatch;
import io.fencepost.OutboxRecord;
import io.fencepost.jdbc.internal.PluginChecks;
import io.fencepost.jdbc.internal.SqlScripts;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.apache.pekko.persistence.state.DurableStateStoreRegistry;
import org.apache.pekko.persistence.state.javadsl.DurableStateUpdateStore;
import org.apache.pekko.persistence.state.javadsl.GetObjectResult;
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
 * stored, and not the first entry after that position holding outbox records; entries without
 * any may go past the relay's position, which then moves to the compaction limit (so that a relay
 * never takes them for a hole). The result says which of them held it back. A projection is seen once it ran or its schema was installed (both register it at
 * position 0). A reader that meets compacted entries it has not
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
   * below every reader's position (see the class comment). The outbox relay's position is read with
   * {@code db}'s own plugins ({@link JournalDatabase#durableStatePluginId()},
   * {@link JournalDatabase#readJournalPluginId()}).
   */
  public static Result compact(ActorSystem<?> system, JournalDatabase db, String persistenceId) {
    return compact(system, db, persistenceId, db.durableStatePluginId(), db.readJournalPluginId());
  }

  /**
   * As {@link #compact(ActorSystem, JournalDatabase, String)}, for a pipeline whose outbox relay uses
   * other plugins ({@code outbox.durable-state-plugin-id}, {@code outbox.read-journal-plugin-id}).
   */
  public static Result compact(ActorSystem<?> system, JournalDatabase db, String persistenceId,
      String durableStatePluginId, String readJournalPluginId) {
    String who = "compaction of [" + persistenceId + "]";
    db.requirePlaced(system, who);
    PluginChecks.requireOn(system.settings().config(), who, db.jdbcUrl(), List.of(durableStatePluginId,
        readJournalPluginId), List.of("durable-state", "read-journal"));
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
        // The outbox relay needs the entries after its position that hold outbox records; entries
        // without any may go, and the relay's position then moves past them (else it would take
        // them for a hole). A live relay that stores meanwhile fails on the revision, restarts and
        // reads the moved position.
        DurableStateUpdateStore<Object> relays = DurableStateStoreRegistry.get(system.classicSystem())
            .getDurableStateStoreFor(DurableStateUpdateStore.class, durableStatePluginId);
        String relayId = OutboxRecord.relayPersistenceId(persistenceId);
        GetObjectResult<Object> relay = await(relays.getObject(relayId), "read the outbox relay's position of", persistenceId);
        long relayAt = relay.value().map(v -> ((Number) v).longValue()).orElse(0L);
        long firstOutbox = firstEntryWithOutbox(system, readJournalPluginId, persistenceId, relayAt, upTo);
        if (firstOutbox > 0) {
          upTo = Math.min(upTo, firstOutbox - 1);
          heldBackBy.add("outbox records from entry " + firstOutbox + " on, not yet published (relay at " + relayAt
              + ")");
        }
        if (upTo > relayAt) {
          await(relays.upsertObject(relayId, relay.revision() + 1, (Object) upTo, ""),
              "move the outbox relay's position (did a relay store one meanwhile? then compact again) of",
              persistenceId);
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

  /** The sequence number of the newest snapshot of {@code persistenceId}; 0 when it has none. */
  public static long newestSnapshot(JournalDatabase db, String persistenceId) {
    try (Connection c = db.connect()) {
      return snapshotSequenceNr(c, persistenceId);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read the snapshots of [" + persistenceId + "] on [" + db.jdbcUrl()
          + "]: " + e.getMessage(), e);
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
    if (!SqlScripts.tableExists(c, "fencepost_projection_offsets")) {
      return out;
    }
    // Projections that read partitions of the same topic and consumer group: one that has not read
    // this partition yet reads it from its start.
    String topicPrefix = persistenceId.substring(0, persistenceId.lastIndexOf('|') + 1);
    String like = topicPrefix.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%";
    try (PreparedStatement st = c.prepareStatement("SELECT projection, MAX(CASE WHEN persistence_id = ? THEN seq "
        + "ELSE 0 END) FROM fencepost_projection_offsets WHERE persistence_id LIKE ? ESCAPE '!' GROUP BY projection")) {
      st.setString(1, persistenceId);
      st.setString(2, like);
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.put(rs.getString(1), rs.getLong(2));
        }
      }
    }
    return out;
  }

  private static <T> T await(CompletionStage<T> stage, String what, String persistenceId) {
    try {
      return stage.toCompletableFuture().get(READ_TIMEOUT_SECONDS, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("cannot " + what + " [" + persistenceId + "]: " + e, e);
    }
  }

  /** The first entry in {@code (after, upTo]} that holds outbox records (0: none). */
  private static long firstEntryWithOutbox(ActorSystem<?> system, String readJournalPluginId, String persistenceId,
      long after, long upTo) {
    if (after >= upTo) {
      return 0;
    }
    JdbcReadJournal journal = PersistenceQuery.get(system)
        .getReadJournalFor(JdbcReadJournal.class, readJournalPluginId);
    try {
      List<EventEnvelope> first = journal.currentEventsByPersistenceId(persistenceId, after + 1, upTo)
          .filter(env -> AppliedBatch.from(env.event()).map(b -> !b.outbox().isEmpty()).orElse(false))
          .take(1)
          .runWith(Sink.seq(), system).toCompletableFuture().get(READ_TIMEOUT_SECONDS, TimeUnit.SECONDS);
      return first.isEmpty() ? 0 : first.get(0).sequenceNr();
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the journal of [" + persistenceId + "]: " + e, e);
    }
  }
}
