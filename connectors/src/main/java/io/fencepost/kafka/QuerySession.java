package io.fencepost.kafka;

import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

import io.fencepost.PartitionId;
import io.fencepost.Query;

/**
 * Monotonic reads: each query of a session is answered from a state at least as new as every earlier
 * answer of the session for the same partition, whichever node answers. A paused former owner (a
 * zombie) can answer a session only from a state no older than what the session saw. Thread-safe;
 * from {@link Pipeline#newSession()}.
 */
public final class QuerySession {

  private final Pipeline pipeline;
  private final Map<PartitionId, Long> seen = new ConcurrentHashMap<>();

  QuerySession(Pipeline pipeline) {
    this.pipeline = pipeline;
  }

  /** {@link Pipeline#query}, bounded below by what this session saw of the partition. */
  public <R> CompletionStage<QueryResult<R>> query(QueryTarget target, Query<R> query, QueryOptions options) {
    return pipeline.partitionOf(target).thenCompose(id -> pipeline.query(
        QueryTarget.partition(id.topic(), id.partition()), query, options.atLeastNext(lastSeen(id)))
        .thenApply(result -> {
          seen.merge(result.partition(), result.appliedNextOffset(), Math::max);
          return result;
        }));
  }

  /** {@link #query(QueryTarget, Query, QueryOptions)} with the default options. */
  public <R> CompletionStage<QueryResult<R>> query(QueryTarget target, Query<R> query) {
    return query(target, query, QueryOptions.defaults());
  }

  /** The highest applied next offset this session saw of the partition ({@code -1}: none). */
  public long lastSeen(PartitionId partition) {
    return seen.getOrDefault(partition, -1L);
  }
}
