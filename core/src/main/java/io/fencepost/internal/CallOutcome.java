package io.fencepost.internal;

import java.util.Objects;

/**
 * The journaled outcome of one external call: the record it was made for, the idempotency key it
 * was made with, and what the provider answered. Kept in the partition's state until the offset
 * moves past the record.
 */
public record CallOutcome(long offset, String key, String outcome) {
  public CallOutcome {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(outcome, "outcome");
  }
}
