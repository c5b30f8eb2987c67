package io.fencepost.kafka.internal;

import java.util.Objects;

import io.fencepost.PartitionId;
import io.fencepost.Query;
import io.fencepost.annotation.InternalApi;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * INTERNAL API: a query to the keeper of a partition's actor, on whichever node owns it.
 *
 * @param minNextOffset answer only from a state whose applied next offset is at least this ({@code -1}: any)
 * @param waitMillis how long the keeper may wait for that state before it refuses with
 *     {@link QueryReply.Kind#NOT_REACHED}
 */
@InternalApi
public record QueryRequest(PartitionId partition, Query<?> query, long minNextOffset, long waitMillis,
    ActorRef<QueryReply> replyTo) {

  public QueryRequest {
    Objects.requireNonNull(partition, "partition");
    Objects.requireNonNull(query, "query");
    Objects.requireNonNull(replyTo, "replyTo");
  }
}
