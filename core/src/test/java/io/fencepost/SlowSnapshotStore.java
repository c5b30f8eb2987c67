package io.fencepost;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.pekko.dispatch.ExecutionContexts;
import org.apache.pekko.dispatch.Futures;
import org.apache.pekko.persistence.SelectedSnapshot;
import org.apache.pekko.persistence.SnapshotMetadata;
import org.apache.pekko.persistence.SnapshotSelectionCriteria;
import org.apache.pekko.persistence.snapshot.japi.SnapshotStore;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;
import scala.concurrent.ExecutionContext;
import scala.concurrent.Future;

/**
 * An in-memory snapshot store whose writes wait at a gate the test opens: a deliberately slow store.
 * Snapshots are kept serialized, as a real store keeps them. One store for the whole JVM (static).
 */
public final class SlowSnapshotStore extends SnapshotStore {

  /** Closed: every write waits until the test counts it down. */
  static volatile CountDownLatch gate = new CountDownLatch(0);
  /** Writes begun, in order of sequence number. */
  static final List<Long> begun = new CopyOnWriteArrayList<>();
  /** persistence id + sequence number of every snapshot stored (deleted ones removed). */
  static final ConcurrentSkipListMap<String, Stored> stored = new ConcurrentSkipListMap<>();
  /** The sequence number of every snapshot handed to a recovery. */
  static final List<Long> loaded = new CopyOnWriteArrayList<>();
  /** Writes begun and not finished. */
  static final AtomicInteger pending = new AtomicInteger();

  record Stored(SnapshotMetadata metadata, byte[] bytes, int serializerId, String manifest) {
  }

  private static final ExecutorService writers = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "slow-snapshot-store");
    t.setDaemon(true);
    return t;
  });
  private final ExecutionContext writing = ExecutionContexts.fromExecutor(writers);
  private final Serialization serialization = SerializationExtension.get(context().system());

  static void reset() {
    gate = new CountDownLatch(0);
    begun.clear();
    stored.clear();
    loaded.clear();
  }

  private static String key(String persistenceId, long sequenceNr) {
    return persistenceId + "\u0000" + String.format("%020d", sequenceNr);
  }

  @Override
  public Future<Optional<SelectedSnapshot>> doLoadAsync(String persistenceId, SnapshotSelectionCriteria criteria) {
    Optional<SelectedSnapshot> newest = stored.values().stream()
        .filter(s -> s.metadata().persistenceId().equals(persistenceId)
            && s.metadata().sequenceNr() <= criteria.maxSequenceNr())
        .reduce((a, b) -> b)
        .map(s -> new SelectedSnapshot(s.metadata(), serialization.deserialize(s.bytes(), s.serializerId(),
            s.manifest()).get()));
    newest.ifPresent(s -> loaded.add(s.metadata().sequenceNr()));
    return Futures.successful(newest);
  }

  @Override
  public Future<Void> doSaveAsync(SnapshotMetadata metadata, Object snapshot) {
    begun.add(metadata.sequenceNr());
    // A snapshot that cannot be serialized fails here, as in a real store, and is never pending.
    Serializer serializer = serialization.findSerializerFor(snapshot);
    byte[] bytes = serializer.toBinary(snapshot);
    String manifest = Serializers.manifestFor(serializer, snapshot);
    pending.incrementAndGet();
    return Futures.future(() -> {
      if (!gate.await(2, TimeUnit.MINUTES)) {
        throw new IllegalStateException("the test never opened the gate");
      }
      try {
        stored.put(key(metadata.persistenceId(), metadata.sequenceNr()),
            new Stored(metadata, bytes, serializer.identifier(), manifest));
        return null;
      } finally {
        pending.decrementAndGet();
      }
    }, writing);
  }

  @Override
  public Future<Void> doDeleteAsync(SnapshotMetadata metadata) {
    stored.remove(key(metadata.persistenceId(), metadata.sequenceNr()));
    return Futures.successful(null);
  }

  @Override
  public Future<Void> doDeleteAsync(String persistenceId, SnapshotSelectionCriteria criteria) {
    stored.values().removeIf(s -> s.metadata().persistenceId().equals(persistenceId)
        && s.metadata().sequenceNr() <= criteria.maxSequenceNr() && s.metadata().sequenceNr() >= criteria.minSequenceNr());
    return Futures.successful(null);
  }
}
