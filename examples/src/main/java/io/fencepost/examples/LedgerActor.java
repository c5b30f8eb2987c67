package io.fencepost.examples;

import java.util.Optional;

import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.Query;

/**
 * A payments ledger: credits each captured payment to its merchant exactly once. The
 * credit and the partition's next offset are written together; a payment re-sent by a producer at a
 * new offset is dropped by its business key.
 *
 * <p>With an outbox topic, each credit is also announced on that topic (same JSON wire format,
 * keyed by merchant) through the outbox: journaled with the credit, published by the relay.
 */
// snippet: ledger-actor
public final class LedgerActor extends PartitionActor<Payment, Ledger, Credited> {

  private static final PaymentJson JSON = new PaymentJson();

  private final Optional<String> outboxTopic;

  public LedgerActor(PartitionContext context) {
    this(context, Optional.empty());
  }

  /** A ledger that announces every credit on {@code outboxTopic}, when present. */
  public LedgerActor(PartitionContext context, Optional<String> outboxTopic) {
    super(context);
    this.outboxTopic = outboxTopic;
  }

  @Override
  protected Ledger emptyState() {
    return Ledger.EMPTY;
  }

  // snippet: outbox-publish
  @Override
  protected Effects<Credited> onRecord(Ledger ledger, Inbound<Payment> in) {
    Payment p = in.value();
    Effects<Credited> credit = Effects.persist(new Credited(p.merchantId(), p.amountCents(), p.paymentId(), in.offset()));
    return outboxTopic.map(topic -> credit.andPublish(topic, p.merchantId(), JSON.serialize(topic, p))).orElse(credit);
  }
  // end-snippet: outbox-publish

  @Override
  protected Ledger applyEvent(Ledger ledger, Credited e) {
    return ledger.credit(e);
  }

  // snippet: on-query
  @Override
  protected Object onQuery(Ledger ledger, Query<?> query) {
    if (query instanceof BalanceOf b) {
      return ledger.balances().getOrDefault(b.merchantId(), 0L);
    }
    return super.onQuery(ledger, query);
  }
  // end-snippet: on-query

  @Override
  protected Optional<String> businessKey(Inbound<Payment> in) {
    Optional<String> header = in.header("idempotency-key");
    return header.isPresent() ? header : Optional.of(in.value().paymentId());
  }
}
// end-snippet: ledger-actor
