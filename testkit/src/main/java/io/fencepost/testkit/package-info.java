/**
 * Testing Fencepost services. {@link io.fencepost.testkit.PartitionActorTestKit} unit-tests a
 * partition actor without broker or database. For integration tests, real services: a single-node
 * KRaft Kafka broker started inside the JVM ({@link io.fencepost.testkit.KafkaBroker}), a real
 * PostgreSQL server, embedded or external ({@link io.fencepost.testkit.Postgres}), embedded H2
 * journals ({@link io.fencepost.testkit.H2}), and separate JVM processes
 * ({@link io.fencepost.testkit.JvmProcess}). No mocks: every test that uses these talks to the real thing.
 */
package io.fencepost.testkit;
