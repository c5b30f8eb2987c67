package io.fencepost.kafka;

import java.util.List;
import java.util.concurrent.CompletionStage;

import io.fencepost.GuaranteeStatement;
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
   * Whether this node's part of the pipeline is live and ready, from what the node knows now
   * (nothing is asked over the network): fast enough for an orchestrator's probe.
   */
  PipelineHealth health();

  /**
   * Stops consuming: in-flight batches finish (bounded by {@code drain-timeout}), their offsets are
   * committed, this node's partition actors stop, then the consumer closes.
   */
  CompletionStage<Done> stop();
}
