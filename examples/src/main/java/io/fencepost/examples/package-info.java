/**
 * Example partition actors (the payments ledger, a counter, telemetry) and {@link
 * io.fencepost.examples.LedgerNode}, the ledger's cluster node; the {@code fencepost} command line
 * that runs them is in {@code io.fencepost.tools}.
 */
package io.fencepost.examples;
