package io.fencepost.examples;

import io.fencepost.JacksonSerializable;

/**
 * A captured payment: the ledger's input. Wire format (any Kafka client can produce it): record key =
 * merchant id (UTF-8), value = JSON {@code {"paymentId": "...", "merchantId": "...", "amountCents": 1234}};
 * the business key is {@code paymentId}, or the {@code idempotency-key} header when present.
 */
public record Payment(String paymentId, String merchantId, long amountCents) implements JacksonSerializable {
}
