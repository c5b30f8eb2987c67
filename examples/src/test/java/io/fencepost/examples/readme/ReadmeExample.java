package io.fencepost.examples.readme;

import java.util.Optional;

import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.examples.Credited;
import io.fencepost.examples.Ledger;
import io.fencepost.examples.Payment;
import io.fencepost.examples.PaymentJson;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import org.apache.pekko.actor.typed.ActorSystem;

/** The README's ten-line example, compiled with the tests (DocsSnippetsTest keeps the two equal). */
final class ReadmeExample {

  private ReadmeExample() {
  }

  static Pipeline start(ActorSystem<?> system) {
    // snippet: readme
    final class LedgerActor extends PartitionActor<Payment, Ledger, Credited> {
      LedgerActor(PartitionContext context) { super(context); }
      @Override protected Ledger emptyState() { return Ledger.EMPTY; }
      @Override protected Effects<Credited> onRecord(Ledger ledger, Inbound<Payment> in) {
        Payment p = in.value();
        return Effects.persist(new Credited(p.merchantId(), p.amountCents(), p.paymentId(), in.offset()));
      }
      @Override protected Ledger applyEvent(Ledger ledger, Credited e) { return ledger.credit(e); }
      @Override protected Optional<String> businessKey(Inbound<Payment> in) { return Optional.of(in.value().paymentId()); }
    }
    // on every node (a Pekko Cluster is optional: Kafka's group assignment places the partitions):
    return KafkaPipeline.create(system, LedgerActor::new, new PaymentJson(), PipelineSettings.create(system, "ledger")).start();
    // end-snippet: readme
  }
}
