package io.fencepost.tools;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.BiConsumer;

import io.fencepost.examples.Credited;
import io.fencepost.examples.PaymentJson;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.reconciliation.Reconciliation;
import io.fencepost.reconciliation.ReconciliationReport;
import org.apache.kafka.common.header.Header;

/** Reconciliation wired for the ledger: business key = idempotency-key header, else paymentId. */
final class LedgerReconciliation {

  private LedgerReconciliation() {
  }

  /**
   * Reconciles until every expected key is applied or dead-lettered (the pipeline has caught up), or
   * the timeout passes; returns the last report. Kafka's committed offsets are not used for this:
   * after a rebalance they can lag the actors' stored offsets until a partition's next record.
   */
  static ReconciliationReport awaitComplete(Reconciliation reconciliation, Duration timeout,
      BiConsumer<Long, Long> progress) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      ReconciliationReport r = reconciliation.run();
      long done = r.total().applied() + r.total().deadLettered();
      progress.accept(Math.min(done, r.total().expected()), r.total().expected());
      if (done >= r.total().expected() || System.nanoTime() > deadline) {
        return r;
      }
      Thread.sleep(1000);
    }
  }

  static Reconciliation of(String bootstrap, String topic, String group, JournalDatabase journal) {
    return of(bootstrap, topic, group, List.of(journal));
  }

  /** The ledger's reconciliation over its journal databases, in order. */
  static Reconciliation of(String bootstrap, String topic, String group, List<JournalDatabase> journals) {
    PaymentJson json = new PaymentJson();
    return Reconciliation.of(bootstrap, topic, group, journals)
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
