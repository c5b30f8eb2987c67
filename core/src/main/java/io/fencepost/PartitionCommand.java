package io.fencepost;

import java.util.List;
import java.util.Objects;

import io.fencepost.annotation.InternalApi;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The messages a partition actor accepts. A pipeline sends {@link ApplyBatch} and waits for the
 * {@link BatchOutcome} before sending the next batch of the same partition.
 */
public sealed interface PartitionCommand
    permits PartitionCommand.ApplyBatch, PartitionCommand.GetStatus, PartitionCommand.GetState,
    PartitionCommand.Stop, SelfCommand {

  /**
   * INTERNAL API: sent by the pipeline (and the test kit), not by applications. Apply a batch of
   * records of this partition, in offset order. The reply comes after the journal
   * write is durable (or at once, without a write, when every record is a redelivery).
   * {@code deadLetters} are records already published to the dead-letter topic: they are journaled
   * and the offset moves past them, in the same write; a dead letter replaces a record at its offset.
   *
   * <p>{@code coveredFrom} is the sender's promise that the batch (records and dead letters) holds
   * every record of the partition a consumer can read at offsets from {@code coveredFrom} up to its
   * last offset ({@link Long#MAX_VALUE}: no promise). A partition that stored next offset N refuses
   * ({@link io.fencepost.errors.OffsetGapException}) a batch that lacks an offset between N and
   * {@code coveredFrom} below its last offset: applying it would skip records. Offsets in Kafka are
   * not dense (transaction markers, aborted and compacted records leave holes), so only the sender,
   * which can read the log, can vouch for a hole.
   */
  @InternalApi
  record ApplyBatch(List<Inbound<?>> records, List<DeadLetter> deadLetters, long coveredFrom,
      ActorRef<BatchOutcome> replyTo) implements PartitionCommand {
    public ApplyBatch {
      records = List.copyOf(records);
      deadLetters = List.copyOf(deadLetters);
      Objects.requireNonNull(replyTo, "replyTo");
    }

    /** A batch that vouches for the offsets from its first record (or dead letter) on. */
    public ApplyBatch(List<Inbound<?>> records, List<DeadLetter> deadLetters, ActorRef<BatchOutcome> replyTo) {
      this(records, deadLetters, firstOffset(records, deadLetters), replyTo);
    }

    /** A batch without dead letters that vouches for the offsets from its first record on. */
    public ApplyBatch(List<Inbound<?>> records, ActorRef<BatchOutcome> replyTo) {
      this(records, List.of(), replyTo);
    }

    /** The lowest offset of the records and dead letters ({@code Long.MAX_VALUE} for an empty batch). */
    public static long firstOffset(List<Inbound<?>> records, List<DeadLetter> deadLetters) {
      long first = Long.MAX_VALUE;
      for (Inbound<?> r : records) {
        first = Math.min(first, r.offset());
      }
      for (DeadLetter d : deadLetters) {
        first = Math.min(first, d.offset());
      }
      return first;
    }
  }

  /** Ask for the partition's stored position and counters (recovering it first if needed). */
  record GetStatus(ActorRef<PartitionStatus> replyTo) implements PartitionCommand {
    public GetStatus {
      Objects.requireNonNull(replyTo, "replyTo");
    }
  }

  /**
   * Ask for the actor's current user state (recovering it first if needed), for tests and tools in
   * the same process: the state is sent as is, never serialized, so this command is refused
   * between nodes.
   */
  record GetState(ActorRef<Object> replyTo) implements PartitionCommand {
    public GetState {
      Objects.requireNonNull(replyTo, "replyTo");
    }
  }

  /** Stop this incarnation (it recovers from the journal when next needed). */
  record Stop() implements PartitionCommand {
  }
}
