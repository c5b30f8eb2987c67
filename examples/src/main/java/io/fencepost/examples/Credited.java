package io.fencepost.examples;

import io.fencepost.JacksonSerializable;

/** The ledger's event: a merchant was credited for a payment (from the given offset). */
// snippet: credited
public record Credited(String merchantId, long amountCents, String paymentId, long offset)
    implements JacksonSerializable {
}
// end-snippet: credited
