package io.fencepost.internal.writepath;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.internal.KeyWindow;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.PartitionState;
import io.fencepost.internal.SnapshotWriter;
import io.fencepost.internal.WindowImage;
import io.fencepost.internal.WindowSegment;
import io.fencepost.internal.WindowSegments;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.pattern.Patterns;
import org.apache.pekko.persistence.SelectedSnapshot;
import org.apache.pekko.persistence.SnapshotProtocol;
import org.apache.pekko.persistence.SnapshotSelectionCriteria;
import org.slf4j.Logger;

/**
 * Reads the key window segments a recovered snapshot refers to (all at once, beside the actor),
 * and says what a failed read means. Commands that need the window wait until it is installed.
 *
 * <p>A segment missing or not the one referred to can be a race (a later owner's snapshot made it
 * unneeded and deleted it while this incarnation recovered from an older snapshot) or damage: the
 * incarnation stops without a window rather than run with a smaller one, and the next command
 * starts a new one, which recovers from the newest snapshot. The first two failures in a row are
 * WARN; from the third on, an ERROR (at most once a minute) and a halt counted with cause
 * {@code window-unreadable}, as the partition consumes nothing until the segments are readable.
 */
public final class WindowReads {

  private static final Duration READ_TIMEOUT = Duration.ofSeconds(60);
  private static final int WARNINGS_BEFORE_ERROR = 2;

  /** What became of a read. */
  public enum Outcome {
    /** The read of a recovery before a restart: nothing to do. */
    STALE,
    /** The window is installed: commands that waited for it go on. */
    INSTALLED,
    /** The window cannot be read: the incarnation stops. */
    UNREADABLE
  }

  private final PartitionId partition;
  private final PartitionActorSettings settings;
  private final SnapshotWriter snapshots;
  private final WindowSegments segments;
  private final PartitionMetrics metrics;
  // Failed reads in a row per partition: each failure ends the incarnation that counted it.
  private final PartitionFailures failures;
  private final Logger log;

  public WindowReads(PartitionId partition, PartitionActorSettings settings, SnapshotWriter snapshots,
      PartitionMetrics metrics, PartitionFailures failures, Logger log) {
    this.partition = partition;
    this.failures = failures;
    this.settings = settings;
    this.snapshots = snapshots;
    this.segments = snapshots.segments();
    this.metrics = metrics;
    this.log = log;
  }

  /**
   * Recovery completed at journal sequence number {@code sequenceNr} with {@code state}, from a
   * snapshot whose window was {@code recoveredImage} (null: none): the snapshot writer keeps the
   * segments it refers to until the snapshots older than this recovery are deleted, the next
   * snapshot cuts the window into this incarnation's own segments, and a pending window's segments
   * are read, the result sent to {@code self}.
   */
  public void recovered(PartitionState<?> state, long sequenceNr, WindowImage recoveredImage, SelfMessages self) {
    WindowImage image = state.window() == null && !state.windowPending() ? null : recoveredImage;
    segments.recovered();
    snapshots.recovered(sequenceNr, image);
    if (state.windowPending()) {
      self.windowRead(state.windowImage(), read(state.windowImage()), System.nanoTime());
    }
  }

  /** Installs the window read for {@code image} into {@code state}, if it still waits for it. */
  public Outcome install(PartitionState<?> state, WindowImage image, List<WindowSegment> read, Throwable failure,
      long startedNanos) {
    if (!state.windowPending() || image != state.windowImage()) {
      return Outcome.STALE;
    }
    KeyWindow window = window(image, read, failure, startedNanos);
    if (window == null) {
      return Outcome.UNREADABLE;
    }
    state.installWindow(RecoveryChecks.bounded(settings, window));
    return Outcome.INSTALLED;
  }

  /** Reads the segments {@code image} refers to, in its order. */
  private CompletionStage<List<WindowSegment>> read(WindowImage image) {
    ActorRef store = snapshots.store();
    String id = WindowSegment.persistenceIdOf(partition.persistenceId());
    List<CompletableFuture<WindowSegment>> reads = new ArrayList<>();
    for (WindowImage.SegmentRef ref : image.refs()) {
      long seq = ref.sequenceNr();
      // The jdbc plugin answers the newest at or below the maximum: the sequence number is checked.
      SnapshotProtocol.LoadSnapshot load = new SnapshotProtocol.LoadSnapshot(id,
          SnapshotSelectionCriteria.create(seq, Long.MAX_VALUE, seq, 0L), Long.MAX_VALUE);
      reads.add(Patterns.ask(store, load, READ_TIMEOUT).toCompletableFuture().thenApply(answer -> segment(ref, answer)));
    }
    return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new))
        .thenApply(done -> reads.stream().map(CompletableFuture::join).toList());
  }

  private WindowSegment segment(WindowImage.SegmentRef ref, Object answer) {
    if (answer instanceof SnapshotProtocol.LoadSnapshotFailed failed) {
      throw new IllegalStateException("reading the key window segment in snapshot-store row " + ref.sequenceNr()
          + " failed: " + failed.cause(), failed.cause());
    }
    SnapshotProtocol.LoadSnapshotResult result = (SnapshotProtocol.LoadSnapshotResult) answer;
    if (result.snapshot().isEmpty() || result.snapshot().get().metadata().sequenceNr() != ref.sequenceNr()) {
      throw new IllegalStateException("the key window segment in snapshot-store row " + ref.sequenceNr()
          + " is missing");
    }
    SelectedSnapshot selected = result.snapshot().get();
    if (!(selected.snapshot() instanceof WindowSegment segment)) {
      throw new IllegalStateException("the key window segment in snapshot-store row " + ref.sequenceNr() + " holds a "
          + selected.snapshot().getClass().getName());
    }
    return segment;
  }

  /**
   * The window {@code image} and its {@code segments} make, or null after logging why there is
   * none ({@code failure}, or segments that are not the ones referred to): the caller stops.
   */
  private KeyWindow window(WindowImage image, List<WindowSegment> segments, Throwable failure, long startedNanos) {
    if (failure == null) {
      try {
        KeyWindow w = image.restore(segments);
        failures.windowRead(partition.persistenceId());
        log.info("[{}] key window of {} keys read from {} segments in {} ms", partition.shortName(), w.size(),
            segments.size(), (System.nanoTime() - startedNanos) / 1_000_000);
        return w;
      } catch (IllegalStateException e) {
        failure = e;
      }
    }
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    int failed = failures.windowReadFailed(partition.persistenceId());
    String message = "[" + partition.shortName() + "] the key window of the snapshot recovered from cannot be read ("
        + cause.getMessage() + "); this incarnation stops without consuming and the next recovers from the "
        + "newest snapshot (failure " + failed + " in a row)";
    if (failed <= WARNINGS_BEFORE_ERROR) {
      log.warn(message);
    } else {
      metrics.halted("window-unreadable");
      if (failures.errorDue(partition.persistenceId())) {
        log.error(message + ". Nothing of this partition is consumed on this node until its segments (persistence "
            + "id [" + WindowSegment.persistenceIdOf(partition.persistenceId()) + "] in the snapshot store) can be "
            + "read: check the snapshot store's database, and restore those rows from a backup if they were "
            + "deleted");
      }
    }
    return null;
  }
}
