package io.fencepost.benchmarks;

import java.util.Optional;

import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.JacksonSerializable;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Fencepost's side of the workload, ledger-like: each payment journals one {@link Credit} (with its
 * payment id, so the journal can be reconciled against the topic) and the partition's state counts
 * and sums them. The business key is the payment id. With an announcement topic each credit is also
 * published through the outbox (key: the merchant; value: the payment id), as the ledger example does.
 */
public final class CreditingActor extends PartitionActor<Payment, CreditingActor.Total, CreditingActor.Credit> {

  /** The journaled effect: a merchant credited for a payment. */
  public record Credit(String paymentId, String merchant, long cents) implements JacksonSerializable {
  }

  /** The partition's state: payments credited and their sum. */
  public record Total(long payments, long cents) implements JacksonSerializable {
  }

  /** Turns record values into payments, in the pipeline. */
  public static final class PaymentDeserializer implements Deserializer<Payment> {
    @Override
    public Payment deserialize(String topic, byte[] data) {
      return Payment.parse(data);
    }
  }

  private final Progress progress;
  private final Optional<String> announceTo;

  CreditingActor(PartitionContext context, Progress progress) {
    this(context, progress, Optional.empty());
  }

  /** @param announceTo the topic each credit is published to through the outbox, if any */
  CreditingActor(PartitionContext context, Progress progress, Optional<String> announceTo) {
    super(context);
    this.progress = progress;
    this.announceTo = announceTo;
  }

  @Override
  protected Total emptyState() {
    return new Total(0, 0);
  }

  @Override
  protected Effects<Credit> onRecord(Total total, Inbound<Payment> in) {
    progress.started();
    Payment p = in.value();
    Effects<Credit> credit = Effects.persist(new Credit(p.businessKey(), p.merchant(), p.cents()));
    return announceTo.map(topic -> credit.andPublish(topic, p.merchant(), p.businessKey())).orElse(credit);
  }

  @Override
  protected Total applyEvent(Total total, Credit c) {
    return new Total(total.payments() + 1, total.cents() + c.cents());
  }

  @Override
  protected Optional<String> businessKey(Inbound<Payment> in) {
    return Optional.of(in.value().businessKey());
  }
}
