package io.fencepost.kafka;

import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletionStage;
import java.util.function.BooleanSupplier;

import io.fencepost.PartitionId;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.pekko.Done;

/**
 * What the ownership state machine asks of the rest of the pipeline, one interface per collaborator,
 * so that its unit tests put a fake in place of each (and a {@code MockConsumer} in place of Kafka's).
 *
 * @param actors the partitions' actors on this node ({@link PartitionHost})
 * @param startOffsets where a partition's stream starts ({@link SeekTargets})
 * @param batches applies a partition's batches ({@link BatchDelivery})
 * @param relays the partitions' outbox relays ({@link RelayRegistry})
 * @param ticker the clock of every age the state machine measures ({@link Ticker#SYSTEM} in a pipeline)
 */
record OwnershipSeams(Actors actors, StartOffsets startOffsets, Batches batches, Relays relays, Ticker ticker) {

  /** The partitions' actors on this node. */
  interface Actors {
    /** The partition's actor may run here (once its previous incarnation on this node stopped). */
    void admit(PartitionId id);

    /** Stops the partition's actor after the commands it holds; completes when it stopped. */
    CompletionStage<Done> stop(PartitionId id);
  }

  /** Where a partition's stream starts. */
  interface StartOffsets {
    /**
     * The offset to seek to (the actor's stored next offset, or the reset position); fails with a
     * {@link java.util.concurrent.CancellationException} once {@code wanted} turns false.
     */
    CompletionStage<Long> seekTarget(PartitionId id, PartitionProgress progress, BooleanSupplier wanted);
  }

  /** Applies a partition's batches. */
  interface Batches {
    /** Applies one batch (ascending offsets): the offset to commit, or empty when the assignment ended first. */
    CompletionStage<OptionalLong> deliver(PartitionId id, PartitionProgress progress,
        List<ConsumerRecord<byte[], byte[]>> batch);
  }

  /** The partitions' outbox relays. */
  interface Relays {
    /** Runs the relay of a partition whose stream seeked to its actor's offset. */
    void start(PartitionId id);

    void stop(PartitionId id);
  }
}
