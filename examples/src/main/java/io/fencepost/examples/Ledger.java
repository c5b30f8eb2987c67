package io.fencepost.examples;

import java.util.HashMap;
import java.util.Map;

import io.fencepost.JacksonSerializable;

/** A partition's ledger: balance per merchant and the number of payments credited. Immutable. */
public record Ledger(Map<String, Long> balances, long payments) implements JacksonSerializable {

  public static final Ledger EMPTY = new Ledger(Map.of(), 0);

  public Ledger {
    balances = Map.copyOf(balances);
  }

  /** The ledger after crediting {@code e}. */
  public Ledger credit(Credited e) {
    Map<String, Long> next = new HashMap<>(balances);
    next.merge(e.merchantId(), e.amountCents(), Long::sum);
    return new Ledger(next, payments + 1);
  }
}
