package io.fencepost.kafka;

/**
 * What an orchestrator asks of a pipeline on this node (see docs/operations.md, "Health endpoints").
 *
 * @param pipeline the pipeline's name
 * @param live false when the consumer thread ended without a stop, or has not returned from a poll
 *     within the consumer's {@code max.poll.interval.ms}: restarting the process is the remedy
 * @param ready true when the consumer joined its group and every partition assigned here recovered,
 *     flows, is not halted and is not stalled (records to apply and no batch finished for
 *     {@code stall-timeout}); false while starting, recovering, stopping, or when a partition needs
 *     an operator
 * @param reason why it is not live or not ready, naming the partitions; empty when both hold
 */
public record PipelineHealth(String pipeline, boolean live, boolean ready, String reason) {
}
