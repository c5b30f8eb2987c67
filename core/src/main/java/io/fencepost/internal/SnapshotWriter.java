package io.fencepost.internal;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.atomic.AtomicBoolean;

import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.pattern.Patterns;
import org.apache.pekko.persistence.DeleteSnapshotsSuccess;
import org.apache.pekko.persistence.Persistence;
import org.apache.pekko.persistence.SaveSnapshotFailure;
import org.apache.pekko.persistence.SaveSnapshotSuccess;
import org.apache.pekko.persistence.SnapshotMetadata;
import org.apache.pekko.persistence.SnapshotProtocol;
import org.apache.pekko.persistence.SnapshotSelectionCriteria;
import org.slf4j.Logger;

/**
 * Stores one partition actor incarnation's snapshots beside its command path: the actor hands over
 * a copy of its state after a write and goes on with the next batch while the snapshot store writes
 * it (Pekko's own snapshotting stashes every command until the store answers). The snapshot is
 * stored exactly as Pekko's would be (the same message to the same plugin), so recovery reads it the
 * same way; a process that dies mid-write leaves the previous snapshot, and recovery replays more
 * events. At most one snapshot is in flight: one that falls due meanwhile waits for the next write.
 * Once a snapshot is stored, the ones older than the newest {@code keep} it stored are deleted.
 *
 * <p>{@link #due} and {@link #offer} run on the actor's thread; the store's answers arrive on other
 * threads and touch only the in-flight flag and the list of stored sequence numbers.
 */
public final class SnapshotWriter {

  private static final Duration STORE_TIMEOUT = Duration.ofSeconds(60);

  private final ActorRef store;
  private final String persistenceId;
  private final String name;
  private final long every;
  private final int keep;
  private final Logger log;
  private final AtomicBoolean inFlight = new AtomicBoolean();
  private final Deque<Long> stored = new ArrayDeque<>();
  private long lastTaken;

  /**
   * @param pluginId the snapshot plugin ({@code ""}: {@code pekko.persistence.snapshot-store.plugin})
   * @param every a snapshot falls due when the sequence number passes a multiple of it
   * @param keep how many of this incarnation's newest snapshots to keep
   */
  public SnapshotWriter(ActorSystem<?> system, String pluginId, String persistenceId, String name, long every,
      int keep, Logger log) {
    // Persistence.snapshotStoreFor is Pekko's stable internal API for plugin users (@InternalStableApi).
    this.store = Persistence.get(system.classicSystem()).snapshotStoreFor(pluginId, ConfigFactory.empty());
    this.persistenceId = persistenceId;
    this.name = name;
    this.every = every;
    this.keep = keep;
    this.log = log;
  }

  /** The incarnation recovered up to {@code sequenceNr}: the next snapshot falls due at the next multiple. */
  public void recovered(long sequenceNr) {
    lastTaken = sequenceNr;
  }

  /** Whether a write that reached {@code sequenceNr} should hand over a snapshot now. */
  public boolean due(long sequenceNr) {
    return sequenceNr / every > lastTaken / every && !inFlight.get();
  }

  /** Stores {@code snapshot} (a copy the actor no longer mutates) as the state at {@code sequenceNr}. */
  public void offer(long sequenceNr, Object snapshot) {
    if (!inFlight.compareAndSet(false, true)) {
      return;
    }
    lastTaken = sequenceNr;
    long started = System.nanoTime();
    SnapshotMetadata metadata = new SnapshotMetadata(persistenceId, sequenceNr, System.currentTimeMillis());
    Patterns.ask(store, new SnapshotProtocol.SaveSnapshot(metadata, snapshot), STORE_TIMEOUT)
        .whenComplete((answer, error) -> {
          try {
            if (answer instanceof SaveSnapshotSuccess) {
              log.debug("[{}] snapshot at sequence number [{}] stored in {} ms, beside the command path", name,
                  sequenceNr, (System.nanoTime() - started) / 1_000_000);
              stored(sequenceNr);
            } else {
              Throwable cause = answer instanceof SaveSnapshotFailure f ? f.cause() : error;
              log.warn("[{}] snapshot at sequence number [{}] failed (recovery replays more events until the next "
                  + "one succeeds): {}", name, sequenceNr, String.valueOf(cause));
            }
          } finally {
            inFlight.set(false);
          }
        });
  }

  private void stored(long sequenceNr) {
    long below;
    synchronized (stored) {
      stored.addLast(sequenceNr);
      if (stored.size() <= keep) {
        return;
      }
      while (stored.size() > keep) {
        stored.removeFirst();
      }
      below = stored.peekFirst();
    }
    // Older snapshots, this incarnation's and its predecessors', are no longer needed.
    Patterns.ask(store, new SnapshotProtocol.DeleteSnapshots(persistenceId,
        SnapshotSelectionCriteria.create(below - 1, Long.MAX_VALUE)), STORE_TIMEOUT)
        .whenComplete((answer, error) -> {
          if (!(answer instanceof DeleteSnapshotsSuccess)) {
            log.debug("[{}] deleting snapshots below sequence number [{}] failed (they are deleted with the next): {}",
                name, below, error != null ? error : answer);
          }
        });
  }
}
