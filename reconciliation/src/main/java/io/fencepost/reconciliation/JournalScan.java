package io.fencepost.reconciliation;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import io.fencepost.AppliedBatch;
import io.fencepost.OutboxRecord;
import io.fencepost.PartitionId;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;

/**
 * What the journal of one group's partitions of a topic says was applied: the business keys (from
 * the events, or from the digests each write stores), the records dead-lettered, and how many writes
 * covered each offset (for records without a business key).
 */
final class JournalScan {

  private final Set<Long> deadPositions = new HashSet<>();
  /** Per partition: from each offset on, how many applied batches covered it. */
  private final List<TreeMap<Long, Integer>> coverage = new ArrayList<>();
  /** What the actors reported dropping as business-key duplicates. */
  long droppedByKey;
  long deadLettered;
  /** Business-key digests the journal holds. */
  long journaledDigests;
  /** With an outbox topic: the ids of the outbox records the journal holds for it. */
  private final String outboxTopic;
  final Set<String> outboxIds = new HashSet<>();

  JournalScan(int partitions, String outboxTopic) {
    this.outboxTopic = outboxTopic;
    for (int i = 0; i < partitions; i++) {
      coverage.add(new TreeMap<>());
    }
  }

  /**
   * Reads every partition's journal; counts applied keys into {@code keys}: the stored digests when
   * {@code journaledKeys}, else the keys {@code effectKeys} reads from the events.
   */
  void read(JournalDatabases journals, ClassLoader classLoader, String group, String topic, boolean journaledKeys,
      Function<Object, Optional<String>> effectKeys, KeyTally keys) {
    for (JournalDatabase journal : journals.databases()) {
      read(journals, journal, classLoader, group, topic, journaledKeys, effectKeys, keys);
    }
    for (TreeMap<Long, Integer> deltas : coverage) {
      int running = 0;
      for (Map.Entry<Long, Integer> e : deltas.entrySet()) {
        running += e.getValue();
        e.setValue(running);   // from this offset on, covered this many times
      }
    }
  }

  /** Reads the partitions whose histories live in {@code journal}. */
  private void read(JournalDatabases journals, JournalDatabase journal, ClassLoader classLoader, String group,
      String topic, boolean journaledKeys, Function<Object, Optional<String>> effectKeys, KeyTally keys) {
    ActorSystem<Void> reader = journal.localSystem("fencepost-reconciliation", classLoader);
    try {
      JdbcReadJournal read = PersistenceQuery.get(reader)
          .getReadJournalFor(JdbcReadJournal.class, journal.readJournalPluginId());
      for (int p = 0; p < coverage.size(); p++) {
        int partition = p;
        PartitionId id = new PartitionId(group, topic, p);
        if (journals.databaseOf(id) != journal) {
          continue;
        }
        String pid = id.persistenceId();
        read.currentEventsByPersistenceId(pid, 0, Long.MAX_VALUE)
            .runForeach(env -> AppliedBatch.from(env.event()).ifPresent(batch -> {
              if (outboxTopic != null) {
                for (int i = 0; i < batch.outbox().size(); i++) {
                  if (batch.outbox().get(i).topic().equals(outboxTopic)) {
                    outboxIds.add(OutboxRecord.id(pid, env.sequenceNr(), i));
                  }
                }
              }
              droppedByKey += batch.droppedByKey();
              deadLettered += batch.deadLetters().size();
              batch.deadLetters().forEach(dl -> deadPositions.add(position(partition, dl.offset())));
              if (batch.nextOffset() > batch.fromOffset() && !batch.incarnation().startsWith("offset-reset-")) {
                coverage.get(partition).merge(batch.fromOffset(), 1, Integer::sum);
                coverage.get(partition).merge(batch.nextOffset(), -1, Integer::sum);
              }
              if (journaledKeys) {
                long[] digests = batch.appliedKeyDigests();
                journaledDigests += digests.length / 2;
                keys.appliedDigests(digests);
                return;
              }
              for (Object event : batch.events()) {
                effectKeys.apply(event).ifPresent(keys::applied);
              }
            }), reader)
            .toCompletableFuture().get(10, TimeUnit.MINUTES);
      }
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the journal at " + journal.jdbcUrl() + ": " + e, e);
    } finally {
      reader.terminate();
      try {
        reader.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      } catch (Exception ignored) {
        // best effort
      }
    }
  }

  /** Whether the record at {@code offset} of {@code partition} was dead-lettered. */
  boolean deadLettered(int partition, long offset) {
    return deadPositions.contains(position(partition, offset));
  }

  /** How many journal writes covered {@code offset} of {@code partition} (after {@link #read}). */
  int timesCovered(int partition, long offset) {
    if (partition >= coverage.size()) {
      return 0;
    }
    Map.Entry<Long, Integer> covered = coverage.get(partition).floorEntry(offset);
    return covered == null ? 0 : covered.getValue();
  }

  private static long position(int partition, long offset) {
    return ((long) partition << 48) | offset;
  }
}
