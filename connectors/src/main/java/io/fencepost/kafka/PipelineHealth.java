package io.fencepost.kafka;

import java.time.Duration;

/**
 * What an orchestrator asks of a pipeline on this node (see docs/operations.md, "Health endpoints").
 *
 * @param pipeline the pipeline's name
 * @param live false when the consumer thread ended without a stop, or has not gone round its loop
 *     (a poll, or a failed attempt) within the consumer's {@code max.poll.interval.ms}, or the journal
 *     or snapshot plugin actor has been missing for {@code dead-after} (Pekko never starts a stopped
 *     plugin again): restarting the process is the remedy
 * @param ready true when the consumer is in its group and running (not being replaced after a
 *     failure), its assignment has not changed for {@link #SETTLE}, and every partition assigned here
 *     recovered, flows, is not halted and is not stalled (records to apply and no batch finished for
 *     {@code stall-timeout}); false while starting, rebalancing, recovering, stopping, or when a
 *     partition needs an operator
 * @param reason why it is not live or not ready, naming the partitions; empty when both hold
 */
public record PipelineHealth(String pipeline, boolean live, boolean ready, String reason) {

  /**
   * How long a node's assignment must stay unchanged before it counts as ready: the second round of
   * a cooperative rebalance (partitions revoked elsewhere in the first) follows the first within it.
   */
  public static final Duration SETTLE = Duration.ofSeconds(5);
}
