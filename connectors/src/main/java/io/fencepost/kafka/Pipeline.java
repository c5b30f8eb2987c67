package io.fencepost.kafka;

import java.util.List;
import java.util.concurrent.CompletionStage;

import io.fencepost.GuaranteeStatement;
import io.fencepost.PartitionId;
import io.fencepost.Query;
import org.apache.pekko.Done;

/** A running Kafka pipeline on this node: see {@link KafkaPipeline#start()}. */
public interface Pipeline {

  /** The pipeline's name (its settings live under {@code fencepost.pipelines.<name>}). */
  String name();

  /** What this pipeline guarantees, hop by hop (also logged at start). */
  GuaranteeStatement guarantee();

  /** The partitions this node consumes now, each with its actor's position, counters and lag. */
  CompletionStage<List<PartitionView>> status();

  /**
   * Every partition of the pipeline's topics across the cluster, by topic and partition: each node
   * running the pipeline is asked for its {@link #status()} (through the cluster's receptionist), and
   * a partition no node reported is listed with owner {@code "-"}. On a single node, this node's view
   * plus the partitions it does not own.
   */
  CompletionStage<List<PartitionView>> clusterStatus();

  /**
   * Whether this node's part of the pipeline is live and ready, from what the node knows now
   * (nothing is asked over the network): fast enough for an orchestrator's probe.
   */
  PipelineHealth health();

  /**
   * Asks the partition's actor, on whichever node of the cluster owns the partition, to answer
   * {@code query} from its journaled state ({@link io.fencepost.PartitionActor#onQuery}). No Kafka
   * round trip: the owner is found through the cluster's receptionist (on a single node, locally).
   * While the partition moves, the query is retried within its timeout.
   *
   * <p>Fails with {@link io.fencepost.errors.PartitionMovingException} when no owner answered within
   * the timeout, {@link io.fencepost.errors.PositionNotReachedException} when the owner's state did
   * not reach the options' bound in time, {@link io.fencepost.errors.QueryFailedException} when
   * {@code onQuery} threw, and {@link IllegalArgumentException} for a topic the pipeline does not
   * consume or a partition the topic does not have. See docs/queries.md.
   */
  <R> CompletionStage<QueryResult<R>> query(QueryTarget target, Query<R> query, QueryOptions options);

  /** {@link #query(QueryTarget, Query, QueryOptions)} with the default options: no bound, {@code query.timeout}. */
  default <R> CompletionStage<QueryResult<R>> query(QueryTarget target, Query<R> query) {
    return query(target, query, QueryOptions.defaults());
  }

  /**
   * The partition a target names (for a key, as Kafka's default partitioner maps it, with the
   * topic's partition count read from Kafka at most every 30 s).
   */
  CompletionStage<PartitionId> partitionOf(QueryTarget target);

  /** A session whose queries never see a partition's state older than one it saw before. */
  default QuerySession newSession() {
    return new QuerySession(this);
  }

  /**
   * Stops consuming: in-flight batches finish (bounded by {@code drain-timeout}), their offsets are
   * committed, this node's partition actors stop, then the consumer closes.
   */
  CompletionStage<Done> stop();
}
