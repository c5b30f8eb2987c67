/**
 * Real services for Fencepost's tests and its zero-setup demo: a single-node KRaft Kafka broker
 * started inside the JVM ({@link io.fencepost.testkit.KafkaBroker}), a real PostgreSQL server,
 * embedded or external ({@link io.fencepost.testkit.Postgres}), and embedded H2 journals
 * ({@link io.fencepost.testkit.H2}). No mocks: every test that uses these talks to the real thing.
 */
package io.fencepost.testkit;
