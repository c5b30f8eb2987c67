package io.fencepost.internal;

import java.util.Collections;
import java.util.NavigableSet;
import java.util.TreeSet;

/**
 * Which dead letters of a partition may still be replayed: those its journal records as
 * dead-lettered and not since replayed. A replay (a record with {@code fencepost.replay-of}) of
 * any other offset is dropped, so replaying a dead letter twice, replaying one that another owner
 * applied after all, or running a replay tool twice applies nothing twice.
 *
 * <p>A replayed record that fails again is dead-lettered at its new offset, which takes the old
 * dead letter's place. Part of {@link PartitionState}, rebuilt from the journal like the rest of it.
 */
public final class ReplayLedger {

  private final TreeSet<Long> replayable = new TreeSet<>();

  /** True when a replay of the dead letter at {@code offset} may be applied now. */
  public boolean replayable(long offset) {
    return replayable.contains(offset);
  }

  /** A dead letter was journaled at {@code offset}; {@code replayOf} the one its record replayed, or -1. */
  void deadLettered(long offset, long replayOf) {
    if (replayOf < 0 || replayable.remove(replayOf)) {
      replayable.add(offset);
    }
    // else: a replay of a dead letter replayed before failed again; the earlier replay's effects stand
  }

  /** The replay of the dead letter at {@code offset} was applied (or dropped by its key). */
  void replayed(long offset) {
    replayable.remove(offset);
  }

  /**
   * An operator reset the partition back to {@code offset}: dead letters at or above it are of the old
   * log, and their offsets will name other records; they cannot be replayed any more.
   */
  void forgetFrom(long offset) {
    replayable.tailSet(offset, true).clear();
  }

  /** Dead letters that may still be replayed, ascending (snapshots). */
  public NavigableSet<Long> replayableOffsets() {
    return Collections.unmodifiableNavigableSet(replayable);
  }

  /** Restores a snapshot's ledger. */
  public void restore(Iterable<Long> replayable) {
    replayable.forEach(this.replayable::add);
  }
}
