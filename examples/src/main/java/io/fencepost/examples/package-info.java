/**
 * A runnable Fencepost service (the payments ledger) and the {@code fencepost} command line:
 * {@code demo}, {@code broker}, {@code ledger}, {@code produce}, {@code verify}, {@code dlq replay}.
 */
package io.fencepost.examples;
