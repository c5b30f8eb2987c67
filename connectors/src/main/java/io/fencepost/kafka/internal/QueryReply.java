package io.fencepost.kafka.internal;

import java.util.Objects;

import io.fencepost.PartitionId;
import io.fencepost.annotation.InternalApi;

/** INTERNAL API: a keeper's answer to a {@link QueryRequest}. */
@InternalApi
public sealed interface QueryReply permits QueryReply.Answer, QueryReply.Refusal {

  PartitionId partition();

  /** The reply of {@code onQuery}, from the state at {@code nextOffset} of incarnation {@code incarnation}. */
  record Answer(PartitionId partition, Object reply, long nextOffset, String incarnation, String node)
      implements QueryReply {
    public Answer {
      Objects.requireNonNull(partition, "partition");
      Objects.requireNonNull(incarnation, "incarnation");
      Objects.requireNonNull(node, "node");
    }
  }

  /** Why a keeper did not answer. */
  enum Kind {
    /** The partition is not (or no longer) owned here: look its owner up again. */
    NOT_OWNER,
    /** The state did not reach the request's bound within its wait. */
    NOT_REACHED,
    /** {@code onQuery} threw ({@code causeClass}, {@code message}). */
    FAILED
  }

  /** A refusal, with the keeper's applied next offset ({@code -1}: none yet) and the failure for FAILED. */
  record Refusal(PartitionId partition, Kind kind, long nextOffset, String causeClass, String message)
      implements QueryReply {
    public Refusal {
      Objects.requireNonNull(partition, "partition");
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(causeClass, "causeClass");
      Objects.requireNonNull(message, "message");
    }
  }
}
