package io.fencepost;

import java.time.Duration;

import io.fencepost.jdbc.JournalCompaction;
import io.fencepost.jdbc.JournalDatabase;

/**
 * Snapshots are stored beside a partition's command path, so a batch's reply can come before the
 * snapshot its write made due is in the table: tests that rely on a snapshot wait for its row.
 */
final class SnapshotRows {

  private SnapshotRows() {
  }

  /** Waits (up to 30 s) until the newest snapshot of {@code persistenceId} is at {@code sequenceNr} or later. */
  static void awaitNewest(JournalDatabase db, String persistenceId, long sequenceNr) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    long newest = newest(db, persistenceId);
    while (newest < sequenceNr) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no snapshot of " + persistenceId + " at " + sequenceNr + " within 30 s (newest "
            + newest + ")");
      }
      Thread.sleep(20);
      newest = newest(db, persistenceId);
    }
  }

  private static long newest(JournalDatabase db, String persistenceId) {
    return JournalCompaction.newestSnapshot(db, persistenceId);
  }
}
