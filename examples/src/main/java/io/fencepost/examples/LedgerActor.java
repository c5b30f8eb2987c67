package io.fencepost.examples;

import java.util.Optional;

import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;

/**
 * The seeds' payments ledger: credits each captured payment to its merchant exactly once. The
 * credit and the partition's next offset are written together; a payment re-sent by a producer at a
 * new offset is dropped by its business key.
 */
public final class LedgerActor extends PartitionActor<Payment, Ledger, Credited> {

  public LedgerActor(PartitionContext context) {
    super(context);
  }

  @Override
  protected Ledger emptyState() {
    return Ledger.EMPTY;
  }

  @Override
  protected Effects<Credited> onRecord(Ledger ledger, Inbound<Payment> in) {
    Payment p = in.value();
    return Effects.persist(new Credited(p.merchantId(), p.amountCents(), p.paymentId(), in.offset()));
  }

  @Override
  protected Ledger applyEvent(Ledger ledger, Credited e) {
    return ledger.credit(e);
  }

  @Override
  protected Optional<String> businessKey(Inbound<Payment> in) {
    Optional<String> header = in.header("idempotency-key");
    return header.isPresent() ? header : Optional.of(in.value().paymentId());
  }
}
