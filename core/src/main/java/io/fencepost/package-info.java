/**
 * Fencepost's core API: extend {@link io.fencepost.PartitionActor} to apply each record's effects
 * exactly once, with the partition's next offset stored in the same journal write as the effects.
 * Knows nothing of Kafka or JDBC.
 */
package io.fencepost;
