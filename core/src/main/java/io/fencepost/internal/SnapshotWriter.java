package io.fencepost.internal;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

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
 * events. One snapshot is in flight at a time; one that falls due meanwhile waits and is sent when
 * the store answered (a newer one due before then replaces it), so at most two copies are held.
 * After each stored snapshot at sequence number n, the snapshots at or below
 * {@code n - keep * every} are deleted (Pekko's own rule), whichever incarnation stored them.
 *
 * <p>{@link #due} and {@link #offer} run on the actor's thread; the store's answers arrive on other
 * threads and touch only the in-flight flag and the waiting snapshot.
 */
public final class SnapshotWriter {

  private static final Duration STORE_TIMEOUT = Duration.ofSeconds(60);

  private record Snapshot(long sequenceNr, Object state) {
  }

  private final ActorRef store;
  private final String persistenceId;
  private final String name;
  private final long every;
  private final int keep;
  private final Logger log;
  private final AtomicBoolean inFlight = new AtomicBoolean();
  private final AtomicReference<Snapshot> waiting = new AtomicReference<>();
  private long lastTaken;

  /**
   * @param pluginId the snapshot plugin ({@code ""}: {@code pekko.persistence.snapshot-store.plugin})
   * @param every a snapshot falls due when the sequence number passes a multiple of it
   * @param keep how many snapshots' worth of sequence numbers ({@code keep * every}) to keep below the newest
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
    return sequenceNr / every > lastTaken / every;
  }

  /** Stores {@code state} (a copy the actor no longer mutates) as the state at {@code sequenceNr}. */
  public void offer(long sequenceNr, Object state) {
    lastTaken = sequenceNr;
    waiting.set(new Snapshot(sequenceNr, state));
    sendWaiting();
  }

  /** Sends the waiting snapshot unless one is in flight (any thread). */
  private void sendWaiting() {
    while (waiting.get() != null && inFlight.compareAndSet(false, true)) {
      Snapshot next = waiting.getAndSet(null);
      if (next != null) {
        send(next);
        return;
      }
      inFlight.set(false);
    }
  }

  private void send(Snapshot snapshot) {
    long started = System.nanoTime();
    long sequenceNr = snapshot.sequenceNr();
    SnapshotMetadata metadata = new SnapshotMetadata(persistenceId, sequenceNr, System.currentTimeMillis());
    Patterns.ask(store, new SnapshotProtocol.SaveSnapshot(metadata, snapshot.state()), STORE_TIMEOUT)
        .whenComplete((answer, error) -> {
          try {
            if (answer instanceof SaveSnapshotSuccess) {
              log.debug("[{}] snapshot at sequence number [{}] stored in {} ms, beside the command path", name,
                  sequenceNr, (System.nanoTime() - started) / 1_000_000);
              deleteOlderThan(sequenceNr);
            } else {
              Throwable cause = answer instanceof SaveSnapshotFailure f ? f.cause() : error;
              log.warn("[{}] snapshot at sequence number [{}] failed (recovery replays more events until the next "
                  + "one succeeds): {}", name, sequenceNr, String.valueOf(cause));
            }
          } finally {
            inFlight.set(false);
            sendWaiting();
          }
        });
  }

  private void deleteOlderThan(long sequenceNr) {
    long upTo = sequenceNr - keep * every;
    if (upTo <= 0) {
      return;
    }
    Patterns.ask(store, new SnapshotProtocol.DeleteSnapshots(persistenceId,
        SnapshotSelectionCriteria.create(upTo, Long.MAX_VALUE)), STORE_TIMEOUT)
        .whenComplete((answer, error) -> {
          if (!(answer instanceof DeleteSnapshotsSuccess)) {
            log.debug("[{}] deleting snapshots up to sequence number [{}] failed (they go with the next): {}",
                name, upTo, error != null ? error : answer);
          }
        });
  }
}
