package io.fencepost.kafka;

import java.util.Objects;

import io.fencepost.PartitionId;

/**
 * A query's answer and where it came from.
 *
 * @param reply what the partition's {@code onQuery} returned
 * @param partition the partition asked
 * @param node the address of the node whose actor answered ({@code pekko://system@host:port})
 * @param appliedNextOffset the next offset of the state the reply was computed from: every record
 *     below it is applied ({@code -1}: the partition never applied a record)
 * @param incarnation the answering actor's incarnation
 * @param local whether this node answered (it owns the partition)
 * @param localOnly whether this node was not a cluster member when asked, so that only its own
 *     partitions could answer ({@link ClusterMembership} restarting after the cluster downed the node):
 *     the answer is as consistent as any, but another node may own the partition too (see
 *     docs/queries.md, "What a zombie can answer")
 * @param <R> the reply's type
 */
public record QueryResult<R>(R reply, PartitionId partition, String node, long appliedNextOffset, String incarnation,
    boolean local, boolean localOnly) {

  public QueryResult {
    Objects.requireNonNull(partition, "partition");
    Objects.requireNonNull(node, "node");
    Objects.requireNonNull(incarnation, "incarnation");
  }
}
