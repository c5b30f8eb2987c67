package io.fencepost.errors;

/**
 * A partition stopped taking records because going on would lose or double an effect, and only an
 * operator can decide what comes next: an event the user's {@code applyEvent} cannot apply on
 * recovery, a batch the journal refuses although no single record's event is at fault, or a stored
 * offset above the end of the partition's log. The pipeline stops delivering the partition (it
 * neither commits nor skips anything), logs one ERROR, counts it in {@code fencepost.partition.halts}
 * and shows {@link #reason()} in the partition's status until the partition is assigned again.
 */
public final class PartitionHaltedException extends FatalException {

  private final String partition;
  private final String reason;

  public PartitionHaltedException(String partition, String reason, Throwable cause) {
    super("[" + partition + "] partition HALTED: " + reason, cause);
    this.partition = partition;
    this.reason = reason;
  }

  /** The partition's entity id. */
  public String partition() {
    return partition;
  }

  /** What stopped the partition and what the operator can do, in one sentence or two. */
  public String reason() {
    return reason;
  }
}
