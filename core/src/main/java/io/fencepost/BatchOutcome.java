package io.fencepost;

import java.util.Objects;

import io.fencepost.annotation.InternalApi;
import io.fencepost.errors.FencepostException;

/** INTERNAL API: the reply to {@link PartitionCommand.ApplyBatch}. */
@InternalApi
public sealed interface BatchOutcome permits BatchOutcome.Applied, BatchOutcome.Rejected {

  /** The partition the batch was for. */
  PartitionId partition();

  /**
   * The batch is done and durable: {@code applied} records ran their handler, the others were
   * dropped as redeliveries (offset below the stored next offset) or by business key.
   *
   * @param nextOffset the partition's stored next offset after the batch
   * @param written whether this batch made a journal write (false when it was all redeliveries)
   * @param deadLettered dead letters journaled by this batch
   * @param published outbox records journaled by this batch (for the relay to publish)
   */
  record Applied(PartitionId partition, long nextOffset, int applied, int droppedRedelivery, int droppedByKey,
      boolean written, int deadLettered, int published) implements BatchOutcome {

    /** An outcome without dead letters or outbox records. */
    public Applied(PartitionId partition, long nextOffset, int applied, int droppedRedelivery, int droppedByKey,
        boolean written) {
      this(partition, nextOffset, applied, droppedRedelivery, droppedByKey, written, 0, 0);
    }
  }

  /**
   * Nothing of the batch was applied. {@link FencepostException#isRetriable()} says whether to
   * resend it: after a {@link io.fencepost.errors.PartitionFencedException} resend from the stored
   * next offset; after a journal failure, resend after a backoff.
   */
  record Rejected(PartitionId partition, FencepostException error) implements BatchOutcome {
    public Rejected {
      Objects.requireNonNull(error, "error");
    }
  }
}
