package io.fencepost.internal.writepath;

import java.util.List;

import io.fencepost.DeliveryMode;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.KeyWindow;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.PartitionState;
import io.fencepost.internal.WindowImage;
import org.slf4j.Logger;

/**
 * Recovery: the replay of journal entries written by earlier incarnations, the checks that each
 * follows the state before it, the snapshot's key window, and the log of how recovery went. A
 * failed recovery restarts the actor with backoff (same object: what is counted here survives it).
 * Used on the actor's thread only.
 */
public final class RecoveryChecks<V, S, E> {

  // Recoveries in a row that met a journal entry not following the state before it (see journalGap).
  private static final int GAPS_BEFORE_HALT = 3;

  private final PartitionId partition;
  private final PartitionActorSettings settings;
  private final UserHandlers<V, S, E> handlers;
  private final Standing standing;
  private final PartitionMetrics metrics;
  private final PartitionFailures failures;
  private final Logger log;
  private final long startedNanos = System.nanoTime();
  private int gaps;
  private boolean logged;
  // First recovery only, for its log line: when the snapshot arrived (0: none), entries replayed after it.
  private long snapshotReadNanos;
  private long replayedEntries;
  // The window of the snapshot the current recovery started from, as stored.
  private WindowImage snapshotWindow;

  public RecoveryChecks(PartitionId partition, PartitionActorSettings settings, UserHandlers<V, S, E> handlers,
      Standing standing, PartitionMetrics metrics, PartitionFailures failures, Logger log) {
    this.partition = partition;
    this.failures = failures;
    this.settings = settings;
    this.handlers = handlers;
    this.standing = standing;
    this.metrics = metrics;
    this.log = log;
  }

  /** The key window the settings ask for (null: no window). */
  public static KeyWindow newWindow(PartitionActorSettings settings) {
    return settings.keyWindowEnabled()
        ? new KeyWindow(settings.keyWindowMaxKeys(), settings.keyWindowMaxAge().toMillis())
        : null;
  }

  /**
   * The state a snapshot holds, its key window bounded as the settings are now. A window stored all
   * inline is rebuilt here; one with segments is left pending, to be read once recovery completed
   * ({@link WindowReads}), and the entries replayed meanwhile keep their keys for it.
   */
  public PartitionState<S> fromSnapshot(PartitionState<S> stored) {
    if (!logged) {
      snapshotReadNanos = System.nanoTime();
    }
    KeyWindow fresh = newWindow(settings);
    snapshotWindow = stored.windowImage();
    WindowImage image = fresh == null ? null : stored.windowImage();
    PartitionState<S> state = new PartitionState<>(stored.user(), stored.nextOffset(),
        image == null ? fresh : null, stored.lastIncarnation(), stored.appliedRecords(), stored.droppedByKey(),
        stored.batches(), stored.lastWriteMillis(), stored.deadLettered(), stored.parkedKeys(),
        stored.callOutcomes().values()).replaysFrom(stored);
    if (image == null) {
      return state;
    }
    if (image.refs().isEmpty()) {
      state.pendingWindow(image).installWindow(bounded(settings, image.restore(List.of())));
      return state;
    }
    return state.pendingWindow(image);
  }

  /**
   * {@code restored} bounded as the settings are now: with the bounds it was stored with it is kept
   * as it is (rebuilding a million keys took 55-180 ms), else rebuilt; its keys keep their ordinals.
   */
  public static KeyWindow bounded(PartitionActorSettings settings, KeyWindow restored) {
    if (restored.maxKeys() == settings.keyWindowMaxKeys()
        && restored.maxAgeMillis() == settings.keyWindowMaxAge().toMillis()
        && restored.size() <= restored.maxKeys()) {
      return restored;
    }
    KeyWindow window = KeyWindow.startingAt(settings.keyWindowMaxKeys(), settings.keyWindowMaxAge().toMillis(),
        restored.firstOrdinal());
    restored.forEach(window::add);
    return window;
  }

  /** The window of the snapshot the recovery that completed started from (null: none), once. */
  public WindowImage takeSnapshotWindow() {
    WindowImage image = snapshotWindow;
    snapshotWindow = null;
    return image;
  }

  /** A journal entry of an earlier incarnation, replayed: its events folded into the state with applyEvent. */
  @SuppressWarnings("unchecked")
  public PartitionState<S> replay(PartitionState<S> state, BatchEvent event) {
    if (standing.halted()) {
      return state;   // nothing after the entry that could not be applied is applied
    }
    if (event.fromOffset() != state.nextOffset()) {
      return journalGap(state, event);
    }
    replayedEntries++;
    S user = state.user();
    try {
      for (Object e : event.events()) {
        user = handlers.applyEvent(user, (E) e);
      }
    } catch (RuntimeException e) {
      standing.halt("event-handler", handlers.actorClassName() + ".applyEvent threw on recovery for the journal "
          + "entry of " + event.describeOffsets() + ": " + e + ". Its events are in the "
          + "journal and cannot be skipped; nothing more is applied to this partition until a version whose "
          + "applyEvent applies them is deployed and the node restarted", e);
      return state;
    }
    return state.apply(event, user);
  }

  /**
   * Every journal entry starts at the offset the state before it ends at. One that does not means
   * recovery did not read the entries between: compaction emptied them while this incarnation
   * recovered from an older snapshot than the one that now covers them. The recovery fails and runs
   * again (with backoff) from the newest snapshot. Met again and again, entries are missing from the
   * journal itself: the partition halts rather than come up with a state that lacks them.
   */
  private PartitionState<S> journalGap(PartitionState<S> state, BatchEvent event) {
    String what = "the journal entry of " + event.describeOffsets() + " follows a state whose next offset is "
        + (state.nextOffset() == PartitionState.NO_OFFSET ? "none" : Long.toString(state.nextOffset()))
        + ": recovery did not read the entries between them";
    if (++gaps <= GAPS_BEFORE_HALT) {
      log.warn("[{}] {} (compacted while this incarnation recovered from an older snapshot); recovering "
          + "again from the newest snapshot ({} of {})", partition.shortName(), what, gaps, GAPS_BEFORE_HALT);
      throw new IllegalStateException("[" + partition.qualifiedName() + "] " + what);
    }
    standing.halt("journal-gap", what + ", in " + gaps + " recoveries in a row: entries are missing from the "
        + "journal (deleted outside Fencepost?), so the partition's state cannot be rebuilt; nothing more is applied "
        + "to it. Restore the journal's missing rows from a backup, then restart the node", null);
    return state;
  }

  /**
   * Recovery failed; the actor restarts with backoff and tries again. A database that is down heals by
   * itself (WARN). A journal entry or snapshot that cannot be deserialized never will: the partition
   * consumes nothing on this node until a version that reads it runs, so that is an ERROR (at most
   * once a minute per partition, counted as a halt with cause {@code journal-undecodable}).
   */
  public void failed(Throwable failure) {
    snapshotWindow = null;
    Throwable undecodable = RecoveryFailures.undecodable(failure);
    if (undecodable == null) {
      log.warn("[{}] recovery failed, retrying with backoff: {}", partition.shortName(), failure.toString());
      return;
    }
    metrics.halted("journal-undecodable");
    String message = "[" + partition.shortName() + "] cannot recover: a journal entry or snapshot of ["
        + partition.persistenceId() + "] cannot be deserialized (" + undecodable + "). Nothing of this partition is "
        + "consumed on this node until a version that reads it runs: bind a serializer for its class in "
        + "pekko.actor.serialization-bindings, add a Jackson migration for a changed event class, or roll back. "
        + "Retrying with backoff";
    if (failures.errorDue(partition.persistenceId())) {
      log.error(message);
    } else {
      log.warn(message);
    }
  }

  /**
   * Recovery completed at journal sequence number {@code sequenceNr}: the first one is logged (part
   * of every fail-over and assignment: how long this partition took to become ready).
   */
  public void completed(PartitionState<S> state, long sequenceNr) {
    gaps = 0;
    failures.recovered(partition.persistenceId());
    if (logged) {
      return;
    }
    logged = true;
    log.info("[{}] recovered in {} ms: next offset {}, sequence number {} ({}, then {} journal "
        + "entries replayed)", partition.shortName(), (System.nanoTime() - startedNanos) / 1_000_000,
        state.nextOffset() == PartitionState.NO_OFFSET ? "none stored" : Long.toString(state.nextOffset()),
        sequenceNr, snapshotReadNanos == 0 ? "no snapshot"
            : "snapshot read after " + (snapshotReadNanos - startedNanos) / 1_000_000 + " ms", replayedEntries);
    if (settings.deliveryMode() == DeliveryMode.AT_MOST_ONCE) {
      log.warn("[{}] runs AT-MOST-ONCE: a crash between the offset write and the effects loses "
          + "that batch's effects", partition.shortName());
    }
  }
}
