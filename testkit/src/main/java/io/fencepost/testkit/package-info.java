/**
 * Unit-testing a Fencepost service: {@link io.fencepost.testkit.PartitionActorTestKit} runs a
 * partition actor as a pipeline does, without broker or database. The in-process broker and
 * PostgreSQL for integration tests are in {@code fencepost-embedded} ({@code io.fencepost.embedded}).
 */
package io.fencepost.testkit;
