package io.fencepost;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A record the partition gave up on: it could not be decoded, or its handler failed fatally or ran
 * out of retries. The pipeline publishes it to the dead-letter topic, then the actor journals it
 * together with the offset moving past it, so every offset ends applied, dropped as a duplicate, or
 * dead-lettered, and nothing is lost.
 *
 * @param offset the record's offset in its partition
 * @param key the record key (UTF-8), when it has one
 * @param errorClass the failure's class name
 * @param errorMessage the failure's message
 * @param attempts how many times the record was tried (1 for a decoding failure)
 * @param parked true when the record did not fail itself but was parked behind an earlier failed
 *     record of the same key ({@code fencepost.partition-actor.per-key-ordering})
 * @param replayOf when the record was itself a replay of an earlier dead letter of its partition
 *     ({@link Inbound#replayOf()}): that dead letter's offset. This new dead letter takes its place:
 *     only the newest one of a record can be replayed.
 */
public record DeadLetter(PartitionId partition, long offset, Optional<String> key, String errorClass,
    String errorMessage, int attempts, boolean parked, OptionalLong replayOf) {

  /** A dead letter of a record that was not a replay. */
  public DeadLetter(PartitionId partition, long offset, Optional<String> key, String errorClass, String errorMessage,
      int attempts, boolean parked) {
    this(partition, offset, key, errorClass, errorMessage, attempts, parked, OptionalLong.empty());
  }

  /** A record that failed itself (not parked). */
  public DeadLetter(PartitionId partition, long offset, Optional<String> key, String errorClass, String errorMessage,
      int attempts) {
    this(partition, offset, key, errorClass, errorMessage, attempts, false);
  }

  public DeadLetter {
    Objects.requireNonNull(partition, "partition");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(errorClass, "errorClass");
    Objects.requireNonNull(replayOf, "replayOf");
    errorMessage = errorMessage == null ? "" : errorMessage;
    if (attempts < 1) {
      throw new IllegalArgumentException("attempts must be >= 1, was [" + attempts + "]");
    }
  }
}
