package io.fencepost.internal.writepath;

import io.fencepost.PartitionId;
import io.fencepost.errors.FencepostException;
import io.fencepost.errors.PartitionFencedException;
import io.fencepost.errors.PartitionHaltedException;
import io.fencepost.internal.PartitionMetrics;
import org.slf4j.Logger;

/**
 * Whether this incarnation may still write: it stops taking batches once it halted (the partition
 * cannot go on without an operator) or was fenced (another incarnation wrote first). Either is for
 * good: every batch is refused with it until the actor stops. Used on the actor's thread only.
 */
public final class Standing {

  private final PartitionId partition;
  private final PartitionMetrics metrics;
  private final Logger log;
  private PartitionHaltedException halted;
  private PartitionFencedException fenced;

  public Standing(PartitionId partition, PartitionMetrics metrics, Logger log) {
    this.partition = partition;
    this.metrics = metrics;
    this.log = log;
  }

  /** What every batch is refused with now (fenced before halted), or null while this incarnation writes. */
  public FencepostException refusal() {
    return fenced != null ? fenced : halted;
  }

  /** Whether this incarnation halted (nothing more is applied to its partition, not even on replay). */
  public boolean halted() {
    return halted != null;
  }

  /** Whether this incarnation takes no more batches (halted or fenced). */
  boolean out() {
    return halted != null || fenced != null;
  }

  /** Why this incarnation takes no more batches, for the log line of what that loses. */
  String whyOut() {
    return halted != null ? "the partition halted" : "this incarnation is fenced";
  }

  /** Halts the partition: one ERROR, a metric, and every batch refused with the returned exception. */
  public PartitionHaltedException halt(String cause, String reason, Throwable failure) {
    halted = new PartitionHaltedException(partition.qualifiedName(), reason, failure);
    metrics.halted(cause);
    log.error("[{}] {}", partition.shortName(), halted.getMessage(), failure);
    return halted;
  }

  /** Another incarnation wrote first: every batch is refused with {@code e} from now on. */
  void fence(PartitionFencedException e) {
    fenced = e;
  }
}
