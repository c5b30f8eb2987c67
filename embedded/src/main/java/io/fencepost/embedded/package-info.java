/**
 * The real parts, inside the JVM, for integration tests and local runs: a single-node KRaft Kafka
 * broker ({@link io.fencepost.embedded.KafkaBroker}), a real PostgreSQL server, embedded or external
 * ({@link io.fencepost.embedded.Postgres}), embedded H2 journals ({@link io.fencepost.embedded.H2}),
 * separate JVM processes ({@link io.fencepost.embedded.JvmProcess}) and a local Pekko cluster
 * ({@link io.fencepost.embedded.ClusterNodes}). No mocks: every test that uses these talks to the
 * real thing.
 */
package io.fencepost.embedded;
