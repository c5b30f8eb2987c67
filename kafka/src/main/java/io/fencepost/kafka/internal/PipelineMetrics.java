package io.fencepost.kafka.internal;

import io.fencepost.PartitionId;
import io.micrometer.core.instrument.Metrics;

/** The meters a pipeline records itself (a partition actor records its own in core). */
public final class PipelineMetrics {

  private PipelineMetrics() {
  }

  /**
   * A partition halted on the pipeline's side ({@code offset-above-log-end}): the same counter
   * {@code fencepost.partition.halts} a partition actor increments for the halts it detects.
   */
  public static void halted(PartitionId id, String cause) {
    Metrics.globalRegistry.counter("fencepost.partition.halts", "group", id.group(), "topic", id.topic(),
        "partition", Integer.toString(id.partition()), "cause", cause).increment();
  }
}
