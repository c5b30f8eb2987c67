package io.fencepost.kafka;

import java.util.OptionalLong;

import io.fencepost.PartitionId;

/**
 * One partition as a pipeline's status reports it.
 *
 * @param ownerNode the address of the node whose actor answered, or {@link #UNANSWERED}
 * @param nextOffset the actor's stored next offset (empty before its first record)
 * @param lag records between the stored next offset and the end of the partition (empty if unknown)
 * @param appliedRecords records applied over the partition's history
 * @param droppedByKey records dropped by business key over the partition's history
 * @param droppedRedelivery redeliveries dropped by the current actor incarnation
 * @param deadLettered records dead-lettered over the partition's history
 * @param retries batches resent by this node after a rejection or timeout
 * @param lastError the last rejection or timeout seen for this partition, or empty
 * @param halted why the partition is halted on this node (nothing is consumed until it is assigned
 *     again; see docs/guarantees.md, "Edges and what detects them"), or empty
 */
public record PartitionView(PartitionId partition, String ownerNode, OptionalLong nextOffset, OptionalLong lag,
    long appliedRecords, long droppedByKey, long droppedRedelivery, long deadLettered, long retries,
    String lastError, String halted) {

  /** {@link #ownerNode()} of a partition whose actor did not answer: its offsets and counts are unknown. */
  public static final String UNANSWERED = "?";

  /** Whether the partition's actor answered (otherwise offsets, lag and counts are not known). */
  public boolean answered() {
    return !ownerNode.equals(UNANSWERED);
  }
}
