package io.fencepost.examples;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.testkit.Reconciliation;
import org.apache.kafka.common.header.Header;

/** Reconciliation wired for the ledger: business key = idempotency-key header, else paymentId. */
final class LedgerReconciliation {

  private LedgerReconciliation() {
  }

  static Reconciliation of(String bootstrap, String topic, String group, JournalDatabase journal) {
    PaymentJson json = new PaymentJson();
    return Reconciliation.of(bootstrap, topic, group, journal)
        .inputKeys(r -> {
          Header h = r.headers().lastHeader("idempotency-key");
          if (h != null) {
            return Optional.of(new String(h.value(), StandardCharsets.UTF_8));
          }
          try {
            return Optional.of(json.deserialize(r.topic(), r.value()).paymentId());
          } catch (RuntimeException e) {
            return Optional.empty();   // unparseable: counted by its own position
          }
        })
        .effectKeys(e -> e instanceof Credited c ? Optional.of(c.paymentId()) : Optional.empty());
  }
}
