/**
 * Benchmarks of Fencepost: {@link io.fencepost.benchmarks.SideBySide} runs it side by side with its
 * peers (raw consumer, pekko-connectors-kafka, naive inbox, Kafka Streams exactly-once) on one
 * broker and one PostgreSQL server, with sweeps and a JFR profile;
 * {@link io.fencepost.benchmarks.RecoveryBenchmark} measures recovery of a large partition.
 */
package io.fencepost.benchmarks;
