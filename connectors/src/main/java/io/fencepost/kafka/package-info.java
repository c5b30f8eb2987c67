/**
 * Kafka for Fencepost: pipelines that route each partition of a consumer group to its
 * {@code PartitionActor}, seek to the offset stored in the actor, and commit to Kafka only after the
 * journal write.
 */
package io.fencepost.kafka;
