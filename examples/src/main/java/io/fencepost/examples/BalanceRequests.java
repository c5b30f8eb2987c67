package io.fencepost.examples;

import java.util.Map;

import io.fencepost.Query;
import io.fencepost.management.http.HttpQuery;

/**
 * {@code GET /queries/balances/{merchant}[?after=<partition>:<offset>]} on a ledger node's management
 * port: the merchant's balance in cents, from the owner of the merchant's partition, on any node. The
 * route is configuration ({@code fencepost.management.queries.balances}, set by {@link LedgerNode});
 * this class is all the code it takes.
 */
// snippet: balance-requests
public final class BalanceRequests implements HttpQuery {
  @Override
  public Query<?> toQuery(String merchant, Map<String, String> parameters) {
    return new BalanceOf(merchant);
  }
}
// end-snippet: balance-requests
