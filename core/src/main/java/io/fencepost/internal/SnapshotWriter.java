package io.fencepost.internal;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
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
 * <p>The key window's older keys are stored as {@link WindowSegment}s under the partition's window
 * persistence id, each before the first snapshot that refers to it; a snapshot is not stored
 * unless all its segments are. After this incarnation stored a snapshot, the segments below the
 * lowest one referred to by the snapshot it recovered from (until the snapshots up to its recovery
 * are deleted) and by its own kept snapshots are deleted: no snapshot that can be the newest refers
 * to them (an incarnation refers only to segments it cut, above every earlier owner's writes). A
 * recovery that meets a segment gone stops, and the next runs from the newest snapshot.
 *
 * <p>{@link #due} and {@link #offer} run on the actor's thread; the store's answers arrive on other
 * threads and touch only the in-flight flag and the waiting snapshot.
 */
public final class SnapshotWriter {

  private static final Duration STORE_TIMEOUT = Duration.ofSeconds(60);
  /** Snapshots not stored in a row from which each {@code ERROR_IN_A_ROW}th is logged at ERROR. */
  static final int ERROR_IN_A_ROW = 3;

  private record Snapshot(long sequenceNr, PartitionState<?> state) {
  }

  // A snapshot this incarnation stored or recovered from, and the lowest segment row it refers to.
  private record Kept(long sequenceNr, long lowestSegment) {
  }

  private final ActorRef store;
  private final String persistenceId;
  private final String windowPersistenceId;
  private final WindowSegments segments;
  private final String name;
  private final long every;
  private final int keep;
  private final Logger log;
  private final Runnable onFailure;
  /** Snapshots in a row that were not stored (segment or state), reset by one that is. */
  private final AtomicInteger failedInARow = new AtomicInteger();
  private final AtomicBoolean inFlight = new AtomicBoolean();
  private final AtomicReference<Snapshot> waiting = new AtomicReference<>();
  private long lastTaken;
  // Guarded by itself: the snapshots whose segments must stay, oldest first.
  private final ArrayDeque<Kept> kept = new ArrayDeque<>();

  /**
   * @param pluginId the snapshot plugin ({@code ""}: {@code pekko.persistence.snapshot-store.plugin})
   * @param every a snapshot falls due when the sequence number passes a multiple of it
   * @param keep how many snapshots' worth of sequence numbers ({@code keep * every}) to keep below the newest
   * @param onFailure runs once per snapshot not stored (a meter)
   */
  public SnapshotWriter(ActorSystem<?> system, String pluginId, String persistenceId, String name, long every,
      int keep, Logger log, Runnable onFailure) {
    // Persistence.snapshotStoreFor is Pekko's stable internal API for plugin users (@InternalStableApi).
    this.store = Persistence.get(system.classicSystem()).snapshotStoreFor(pluginId, ConfigFactory.empty());
    this.persistenceId = persistenceId;
    this.windowPersistenceId = WindowSegment.persistenceIdOf(persistenceId);
    this.segments = new WindowSegments(WindowSegments.SEGMENT_KEYS);
    this.name = name;
    this.every = every;
    this.keep = keep;
    this.log = log;
    this.onFailure = onFailure;
  }

  /** How this incarnation's snapshots cut the key window. */
  public WindowSegments segments() {
    return segments;
  }

  /** The store this writer writes to (for reading segments back). */
  public ActorRef store() {
    return store;
  }

  /**
   * The incarnation recovered up to {@code sequenceNr} from a snapshot whose window was
   * {@code image} (null: none): the next snapshot falls due at the next multiple.
   */
  public void recovered(long sequenceNr, WindowImage image) {
    lastTaken = sequenceNr;
    synchronized (kept) {
      kept.clear();
      kept.add(new Kept(sequenceNr, image == null ? Long.MAX_VALUE : image.lowestSegmentSequenceNr()));
    }
  }

  /**
   * A write reached {@code sequenceNr}, leaving {@code state}: when a snapshot is due, a copy of it is
   * taken now and stored beside the command path. Not while the window's segments are being read
   * (the next write takes it).
   */
  public void written(long sequenceNr, PartitionState<?> state) {
    if (sequenceNr / every > lastTaken / every && !state.windowPending()) {
      lastTaken = sequenceNr;
      waiting.set(new Snapshot(sequenceNr, state.copyForSnapshot(segments, sequenceNr)));
      sendWaiting();
    }
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
    WindowImage image = snapshot.state().windowImage();
    sendSegments(snapshot, image == null ? List.of() : image.toWrite(), 0);
  }

  /** Stores the snapshot's unstored segments one after the other, then the snapshot. */
  private void sendSegments(Snapshot snapshot, List<WindowSegment> toWrite, int from) {
    int next = from;
    while (next < toWrite.size() && segments.isStored(toWrite.get(next).sequenceNr())) {
      next++;   // stored for an earlier snapshot: never written twice
    }
    if (next == toWrite.size()) {
      sendState(snapshot);
      return;
    }
    WindowSegment segment = toWrite.get(next);
    if (segments.hasFailed(segment.sequenceNr())) {
      // Taken before that write failed: never written again (the store may be deleting the row).
      log.debug("[{}] snapshot at sequence number [{}] dropped: its segment {} failed before", name,
          snapshot.sequenceNr(), segment);
      inFlight.set(false);
      sendWaiting();
      return;
    }
    int after = next + 1;
    SnapshotMetadata metadata = new SnapshotMetadata(windowPersistenceId, segment.sequenceNr(),
        System.currentTimeMillis());
    Patterns.ask(store, new SnapshotProtocol.SaveSnapshot(metadata, segment), STORE_TIMEOUT)
        .whenComplete((answer, error) -> {
          boolean goesOn = false;
          try {
            if (answer instanceof SaveSnapshotSuccess) {
              segments.stored(segment.sequenceNr());
              goesOn = true;
              sendSegments(snapshot, toWrite, after);
              return;
            }
            segments.failed(segment.sequenceNr());
            Throwable cause = answer instanceof SaveSnapshotFailure f ? f.cause() : error;
            failed(snapshot, "its key window segment " + segment + " failed", cause);
          } catch (RuntimeException | Error e) {
            goesOn = false;   // never left in flight for good: no snapshot would be taken again
            log.error("[{}] snapshot at sequence number [{}] not stored: {}", name, snapshot.sequenceNr(), e.toString());
          } finally {
            if (!goesOn) {
              inFlight.set(false);
              sendWaiting();
            }
          }
        });
  }

  private void sendState(Snapshot snapshot) {
    long started = System.nanoTime();
    long sequenceNr = snapshot.sequenceNr();
    SnapshotMetadata metadata = new SnapshotMetadata(persistenceId, sequenceNr, System.currentTimeMillis());
    Patterns.ask(store, new SnapshotProtocol.SaveSnapshot(metadata, snapshot.state()), STORE_TIMEOUT)
        .whenComplete((answer, error) -> {
          try {
            if (answer instanceof SaveSnapshotSuccess) {
              log.debug("[{}] snapshot at sequence number [{}] stored in {} ms, beside the command path", name,
                  sequenceNr, (System.nanoTime() - started) / 1_000_000);
              failedInARow.set(0);
              WindowImage image = snapshot.state().windowImage();
              synchronized (kept) {
                kept.add(new Kept(sequenceNr, image == null ? Long.MAX_VALUE : image.lowestSegmentSequenceNr()));
              }
              deleteOlderThan(sequenceNr);
            } else {
              Throwable cause = answer instanceof SaveSnapshotFailure f ? f.cause() : error;
              failed(snapshot, "the snapshot store refused it", cause);
            }
          } finally {
            inFlight.set(false);
            sendWaiting();
          }
        });
  }

  /**
   * A snapshot was not stored: counted, and logged at WARN, or at ERROR from the {@value #ERROR_IN_A_ROW}th
   * in a row (then every {@value #ERROR_IN_A_ROW}th) and at once when the state itself cannot be serialized
   * (no snapshot can ever be stored then: every recovery replays the whole journal, and compaction,
   * which stays below the newest snapshot, never frees anything).
   */
  private void failed(Snapshot snapshot, String how, Throwable cause) {
    onFailure.run();
    int inARow = failedInARow.incrementAndGet();
    String unserializable = unserializable(cause);
    if (unserializable != null && (inARow == 1 || inARow % ERROR_IN_A_ROW == 0)) {
      log.error("[{}] snapshot at sequence number [{}] not stored ({} in a row): the partition's state cannot be "
          + "serialized ({}). No snapshot can be stored: every recovery replays the whole journal and compaction "
          + "frees nothing. Bind a serializer for the state's class in pekko.actor.serialization-bindings (or let "
          + "it implement io.fencepost.JacksonSerializable); the partition goes on meanwhile", name,
          snapshot.sequenceNr(), inARow, unserializable);
    } else if (unserializable == null && inARow % ERROR_IN_A_ROW == 0) {
      log.error("[{}] snapshot at sequence number [{}] not stored, {} in a row: {} ({}); recovery replays more "
          + "events and compaction waits until one is stored; check the snapshot store's database", name,
          snapshot.sequenceNr(), inARow, how, String.valueOf(cause));
    } else if (unserializable == null) {
      log.warn("[{}] snapshot at sequence number [{}] not stored: {} (recovery replays more events until the next "
          + "one succeeds): {}", name, snapshot.sequenceNr(), how, String.valueOf(cause));
    }
  }

  /**
   * The serializer's refusal in {@code cause}'s chain (naming the class it cannot serialize), or null
   * when the store failed for another reason. Read from the failure, never by serializing the state
   * again: that may run on the scheduler's thread, for every partition at once in an outage.
   */
  private static String unserializable(Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof java.io.ObjectStreamException) {   // NotSerializableException, InvalidClassException
        return t.toString();
      }
    }
    return null;
  }

  private void deleteOlderThan(long sequenceNr) {
    long upTo = sequenceNr - keep * every;
    if (upTo <= 0) {
      return;
    }
    delete(persistenceId, upTo, "snapshots");
    long segmentsBelow;
    synchronized (kept) {
      // The snapshot recovered from stays first until the snapshots up to this recovery are deleted:
      // the segments it refers to are kept until then, only older ones go.
      while (!kept.isEmpty() && kept.peekFirst().sequenceNr() <= upTo) {
        kept.removeFirst();
      }
      segmentsBelow = kept.stream().mapToLong(Kept::lowestSegment).min().orElse(Long.MAX_VALUE);
    }
    // segments cut after a later write may be being stored for the next snapshot: never deleted here
    long segmentsUpTo = Math.min(segmentsBelow - 1, WindowSegment.rowKey(sequenceNr, WindowSegment.PER_WRITE - 1));
    if (segmentsUpTo > 0) {
      delete(windowPersistenceId, segmentsUpTo, "key window segments");
    }
  }

  private void delete(String id, long upTo, String what) {
    Patterns.ask(store, new SnapshotProtocol.DeleteSnapshots(id,
        SnapshotSelectionCriteria.create(upTo, Long.MAX_VALUE)), STORE_TIMEOUT)
        .whenComplete((answer, error) -> {
          if (!(answer instanceof DeleteSnapshotsSuccess)) {
            log.debug("[{}] deleting {} up to sequence number [{}] failed (they go with the next): {}",
                name, what, upTo, error != null ? error : answer);
          }
        });
  }
}
