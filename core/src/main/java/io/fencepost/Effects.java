package io.fencepost;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * What a {@link PartitionActor#onRecord handler} wants done for one record: events to persist,
 * records to publish through the outbox, and at most one external call. The events and outbox
 * records of every record of a batch are written together with the partition's next offset, in one
 * journal write.
 *
 * <pre>{@code
 * Effects.persist(new Credited(...))                                   // an event
 *     .andPublish("ledger.credited", merchantId, json);                // and an outbox record
 *
 * Effects.call(key -> provider.charge(payment, key),                  // an external call,
 *     chargeId -> Effects.persist(new Charged(payment, chargeId)));    // then events from its outcome
 * }</pre>
 *
 * <p>Instances are immutable: {@code andPublish} returns a new one.
 *
 * @param <E> the event type
 */
public final class Effects<E> {

  private static final Effects<Object> NONE = new Effects<>(List.of(), List.of(), null, null);

  private final List<E> events;
  private final List<OutboxRecord> outbox;
  private final ExternalCall call;
  private final Function<String, Effects<E>> onOutcome;

  private Effects(List<E> events, List<OutboxRecord> outbox, ExternalCall call,
      Function<String, Effects<E>> onOutcome) {
    this.events = events;
    this.outbox = outbox;
    this.call = call;
    this.onOutcome = onOutcome;
  }

  /** Persist one event. */
  public static <E> Effects<E> persist(E event) {
    return new Effects<>(List.of(Objects.requireNonNull(event, "event")), List.of(), null, null);
  }

  /** Persist these events, in this order. */
  @SafeVarargs
  public static <E> Effects<E> persist(E... events) {
    return new Effects<>(List.copyOf(Arrays.asList(events)), List.of(), null, null);
  }

  /** Persist these events, in this order. */
  public static <E> Effects<E> persistAll(List<? extends E> events) {
    return new Effects<>(List.copyOf(events), List.of(), null, null);
  }

  /** Nothing to persist: the record still counts as applied and the offset moves past it. */
  @SuppressWarnings("unchecked")
  public static <E> Effects<E> none() {
    return (Effects<E>) NONE;
  }

  /**
   * Make one external call, then decide the record's effects from its outcome.
   *
   * <p>The framework runs {@code call} off the actor's thread with the record's stable idempotency
   * key, journals the outcome (before the offset moves), and then calls {@code then} with it in the
   * actor. If the record is handled again (a retried batch, a redelivery after a crash) and its
   * outcome is already journaled, {@code then} gets the stored outcome and the provider is not
   * called again. If the process dies after the call but before the outcome is journaled, the call
   * is made again with the same key: the provider must deduplicate by it (see
   * {@code docs/external-calls.md} for what remains when it cannot).
   *
   * @param then the record's effects given the outcome; must not ask for another call
   */
  public static <E> Effects<E> call(ExternalCall call, Function<String, Effects<E>> then) {
    return new Effects<>(List.of(), List.of(), Objects.requireNonNull(call, "call"),
        Objects.requireNonNull(then, "then"));
  }

  /**
   * These effects plus one record published to {@code topic} through the outbox: journaled with the
   * batch, published after the write, at least once, with a stable {@link OutboxRecord#ID_HEADER}.
   *
   * @param key the record key, or null for none
   */
  public Effects<E> andPublish(String topic, String key, byte[] value) {
    if (call != null) {
      throw new IllegalStateException("publish from the continuation of Effects.call, not alongside the call");
    }
    List<OutboxRecord> more = new ArrayList<>(outbox);
    more.add(new OutboxRecord(topic, Optional.ofNullable(key), value.clone()));
    return new Effects<>(events, List.copyOf(more), null, null);
  }

  /** {@link #andPublish(String, String, byte[])} with the value encoded as UTF-8. */
  public Effects<E> andPublish(String topic, String key, String value) {
    return andPublish(topic, key, value.getBytes(StandardCharsets.UTF_8));
  }

  /** The events, in order. */
  public List<E> events() {
    return events;
  }

  /** The records to publish through the outbox, in order. */
  public List<OutboxRecord> outbox() {
    return outbox;
  }

  /** Whether these effects wait for an external call's outcome. */
  public boolean hasCall() {
    return call != null;
  }

  ExternalCall call() {
    return call;
  }

  Effects<E> then(String outcome) {
    return Objects.requireNonNull(onOutcome.apply(outcome), "the continuation of Effects.call returned null");
  }

  @Override
  public String toString() {
    return "Effects(" + events + (outbox.isEmpty() ? "" : ", outbox " + outbox) + (call == null ? "" : ", call")
        + ")";
  }
}
