package io.fencepost;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;


/**
 * A small ledger partition actor for the integration tests: credits merchants, records which offset
 * each credit came from, and counts its "external calls" per offset so tests can see what a crash
 * repeated or lost.
 */
public class TestLedger extends PartitionActor<TestLedger.Payment, TestLedger.Ledger, TestLedger.Credited> {

  public record Payment(String paymentId, String merchant, long cents) implements JacksonSerializable {
  }

  record Credited(String merchant, long cents, String paymentId, long offset) implements JacksonSerializable {
  }

  record Ledger(long total, long credits) implements JacksonSerializable {
    static final Ledger EMPTY = new Ledger(0, 0);

    Ledger credit(Credited c) {
      return new Ledger(total + c.cents(), credits + 1);
    }
  }

  /** How many credits the partition applied. */
  public record Credits() implements Query<Long>, JacksonSerializable {
  }

  /** External calls made per (test scope, offset): what an at-least-once provider would see. */
  static final Map<String, AtomicInteger> EXTERNAL_CALLS = new ConcurrentHashMap<>();
  /** Offsets whose handler must fail once ("the process dies here"), per test scope. */
  static final Map<String, Boolean> FAIL_ONCE = new ConcurrentHashMap<>();

  private final String scope;

  public TestLedger(PartitionContext context, String scope) {
    super(context);
    this.scope = scope;
  }

  static Inbound<Payment> payment(PartitionId partition, long offset, String paymentId) {
    return Inbound.of(partition, offset, new Payment(paymentId, "m" + (offset % 7), 100 + offset));
  }

  @Override
  protected Object onQuery(Ledger ledger, Query<?> query) {
    return query instanceof Credits ? ledger.credits() : super.onQuery(ledger, query);
  }

  @Override
  protected Ledger emptyState() {
    return Ledger.EMPTY;
  }

  @Override
  protected Effects<Credited> onRecord(Ledger ledger, Inbound<Payment> in) {
    String callKey = scope + "|" + idempotencyKey(in);
    if (context().settings().deliveryMode() == DeliveryMode.AT_LEAST_ONCE) {
      EXTERNAL_CALLS.computeIfAbsent(callKey, k -> new AtomicInteger()).incrementAndGet();
    }
    if (FAIL_ONCE.remove(scope + "|" + in.offset()) != null) {
      throw new IllegalStateException("simulated crash at offset " + in.offset());
    }
    if (context().settings().deliveryMode() == DeliveryMode.AT_MOST_ONCE) {
      EXTERNAL_CALLS.computeIfAbsent(callKey, k -> new AtomicInteger()).incrementAndGet();
    }
    Payment p = in.value();
    return Effects.persist(new Credited(p.merchant(), p.cents(), p.paymentId(), in.offset()));
  }

  @Override
  protected Ledger applyEvent(Ledger ledger, Credited event) {
    return ledger.credit(event);
  }

  @Override
  protected Optional<String> businessKey(Inbound<Payment> in) {
    return Optional.of(in.value().paymentId());
  }

  static int externalCalls(String scope, String key) {
    AtomicInteger n = EXTERNAL_CALLS.get(scope + "|" + key);
    return n == null ? 0 : n.get();
  }

}
