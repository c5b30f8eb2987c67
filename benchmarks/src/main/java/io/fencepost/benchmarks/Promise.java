package io.fencepost.benchmarks;

import java.util.Locale;

/** What a peer promises about its effects, and so what a run must show (any run, crash or not). */
enum Promise {
  /** No effect lost, none doubled. */
  EXACTLY_ONCE(true, true),
  /** No effect lost; duplicates allowed (after a crash or rebalance). */
  AT_LEAST_ONCE(true, false),
  /** No effect doubled; losses allowed (after a crash). */
  AT_MOST_ONCE(false, true);

  private final boolean noLoss;
  private final boolean noDuplicates;

  Promise(boolean noLoss, boolean noDuplicates) {
    this.noLoss = noLoss;
    this.noDuplicates = noDuplicates;
  }

  /** Whether the outcome keeps this promise. */
  boolean keptBy(Outcome o) {
    return (!noLoss || o.losses() == 0) && (!noDuplicates || o.duplicates() == 0);
  }

  /** {@code exactly-once} etc. */
  String label() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }
}
