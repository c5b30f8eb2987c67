package io.fencepost;

import java.util.Objects;
import java.util.function.Function;

import io.fencepost.annotation.InternalApi;

/**
 * INTERNAL API: a partition actor's journaled state, published after its recovery and after every
 * write that became durable, so that queries are answered beside the write path instead of waiting
 * behind a write in flight. Every view is a state the journal holds: a write the fence refused never
 * publishes one.
 *
 * @param nextOffset the partition's stored next offset ({@code -1}: it never applied a record)
 * @param incarnation the incarnation that published it
 */
@InternalApi
public record AppliedView(PartitionId partition, long nextOffset, String incarnation,
    Function<Query<?>, Object> answerer) {

  public AppliedView {
    Objects.requireNonNull(partition, "partition");
    Objects.requireNonNull(incarnation, "incarnation");
    Objects.requireNonNull(answerer, "answerer");
  }

  /** The user's {@link PartitionActor#onQuery} applied to this state (on the caller's thread). */
  public Object answer(Query<?> query) {
    return answerer.apply(query);
  }

  /** Whether this state includes the record at {@code offset} of its partition. */
  public boolean includes(long offset) {
    return nextOffset > offset;
  }
}
