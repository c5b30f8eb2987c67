package io.fencepost;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.LongFunction;
import java.util.function.LongPredicate;

import io.fencepost.annotation.InternalApi;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.RecordsParkedException;

/**
 * INTERNAL API. What becomes of one batch's records whose handler failed, or whose key is parked: the one policy
 * of the Kafka pipeline and the test kit. A retriable failure is tried again until
 * {@code handler-retry.max-attempts} attempts in all; a fatal one, or one out of attempts, is
 * dead-lettered with its attempts; a parked record is dead-lettered as parked, once.
 */
@InternalApi
public final class FailedRecords {

  private final PartitionId partition;
  private final int maxAttempts;
  private final Map<Long, Integer> attempts = new HashMap<>();

  /** For one batch of {@code partition}; {@code maxAttempts} is {@code handler-retry.max-attempts}. */
  public FailedRecords(PartitionId partition, int maxAttempts) {
    this.partition = partition;
    this.maxAttempts = maxAttempts;
  }

  /** How many times the record at {@code offset} failed so far. */
  public int attempts(long offset) {
    return attempts.getOrDefault(offset, 0);
  }

  /**
   * Counts the failure; empty when the batch is to be tried again as it is, else the dead letter that
   * takes the record's place.
   */
  public Optional<DeadLetter> failed(HandlerFailedException h, Optional<String> key, OptionalLong replayOf) {
    int tries = attempts.merge(h.offset(), 1, Integer::sum);
    if (h.isRetriable() && tries < maxAttempts) {
      return Optional.empty();
    }
    return Optional.of(new DeadLetter(partition, h.offset(), key, h.causeClass(), h.causeMessage(), tries, false,
        replayOf));
  }

  /**
   * The dead letters of the parked offsets that are in the batch ({@code inBatch}) and not among
   * {@code already}, each with the message it carries.
   */
  public List<DeadLetter> parked(RecordsParkedException p, Collection<DeadLetter> already, LongPredicate inBatch,
      LongFunction<Optional<String>> keyOf, LongFunction<OptionalLong> replayOf) {
    List<DeadLetter> out = new ArrayList<>();
    for (long offset : p.offsets()) {
      if (!inBatch.test(offset) || already.stream().anyMatch(d -> d.offset() == offset)) {
        continue;
      }
      Optional<String> key = keyOf.apply(offset);
      out.add(new DeadLetter(partition, offset, key, "parked", "key [" + key.orElse("")
          + "] is parked behind an earlier failed record; replay that one first", 1, true, replayOf.apply(offset)));
    }
    return out;
  }
}
