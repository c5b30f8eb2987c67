/**
 * Runnable Fencepost services (a payments ledger, telemetry, counters) and the {@code fencepost}
 * command line: {@code demo}, {@code broker}, {@code ledger}, {@code produce}, {@code verify}.
 */
package io.fencepost.examples;
