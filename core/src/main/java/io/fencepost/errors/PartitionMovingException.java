package io.fencepost.errors;

import java.time.Duration;
import java.time.Instant;

/**
 * No owner of the partition answered a query within its timeout: the partition is moving between
 * nodes (a rebalance, a node that failed and whose partitions the group has not yet reassigned) or
 * its owner is unreachable. The query was retried until its timeout; asking again later can succeed.
 */
public final class PartitionMovingException extends RetriableException {

  private final String partition;
  private final Instant since;

  /**
   * @param since since when no owner is known, or, when {@code ownerAsked}, since when the owners
   *     asked did not answer (the query's start)
   * @param ownerAsked whether an owner was known and asked (it did not answer, or no longer owned the
   *     partition)
   */
  public PartitionMovingException(String partition, Instant since, boolean ownerAsked, Duration waited,
      String lastFailure) {
    super("[" + partition + "] partition is moving: no owner answered within " + waited.toMillis()
        + " ms (" + (ownerAsked ? "owners were asked since " : "no owner known since ") + since + ")"
        + (lastFailure.isEmpty() ? "" : "; last attempt: " + lastFailure));
    this.partition = partition;
    this.since = since;
  }

  /** The partition's entity id. */
  public String partition() {
    return partition;
  }

  /** Since when this node knows no owner, or since when the owners it asked did not answer (the query's start). */
  public Instant since() {
    return since;
  }
}
