package io.fencepost.examples;

import io.fencepost.JacksonSerializable;
import io.fencepost.Query;

/** The balance of one merchant in cents (0 for a merchant never credited), asked of its partition. */
// snippet: query-type
public record BalanceOf(String merchantId) implements Query<Long>, JacksonSerializable {
}
// end-snippet: query-type
