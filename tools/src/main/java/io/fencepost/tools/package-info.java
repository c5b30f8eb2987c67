/**
 * The {@code fencepost} command line ({@code java -jar tools/target/fencepost.jar <command>}): the
 * zero-setup demo, the example ledger node, producing test payments, reconciling a journal against
 * its topic ({@link io.fencepost.tools.Reconciliation}), dead-letter replay, offset resets and
 * chaos campaigns.
 */
package io.fencepost.tools;
