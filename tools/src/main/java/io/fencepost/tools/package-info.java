/**
 * The {@code fencepost} command line ({@code java -jar tools/target/fencepost.jar <command>}): the
 * zero-setup demo, the example ledger node, producing test payments, reconciling a journal against
 * its topic ({@code fencepost verify}, on {@code io.fencepost.reconciliation.Reconciliation}),
 * dead-letter replay, offset resets and chaos campaigns.
 */
package io.fencepost.tools;
