package io.fencepost;

import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;

import io.fencepost.annotation.InternalApi;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.BehaviorSignalInterceptor;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Signal;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;

/**
 * The owner of one partition: extend it to apply each record's effects exactly once.
 *
 * <p>For every batch of records of its partition the framework drops records whose offset is below
 * the partition's stored next offset (redeliveries) and records whose business key is in the key
 * window (producer-side re-sends), calls {@link #onRecord} for the rest in offset order, and writes
 * the returned events <em>together with the new next offset and the new keys</em> in one journal
 * write. The stored offset is a fencing token: a stale incarnation of the same partition cannot
 * write after the current one, because the journal's unique key rejects it.
 *
 * <pre>{@code
 * public final class LedgerActor extends PartitionActor<Payment, Ledger, Credited> {
 *   public LedgerActor(PartitionContext context) { super(context); }
 *   @Override protected Ledger emptyState() { return Ledger.EMPTY; }
 *   @Override protected Effects<Credited> onRecord(Ledger ledger, Inbound<Payment> in) {
 *     Payment p = in.value();
 *     return Effects.persist(new Credited(p.merchantId(), p.amountCents(), p.paymentId(), in.offset()));
 *   }
 *   @Override protected Ledger applyEvent(Ledger ledger, Credited e) { return ledger.credit(e); }
 *   @Override protected Optional<String> businessKey(Inbound<Payment> in) { return Optional.of(in.value().paymentId()); }
 * }
 * }</pre>
 *
 * <p>Events and state must be serializable by Pekko (implement {@link JacksonSerializable} or bind a
 * serializer). State must be immutable: {@link #applyEvent} returns a new state and never changes the
 * one it is given, because a batch's events are first folded into a tentative state that is dropped
 * when the batch is rejected.
 *
 * @param <V> the record value type
 * @param <S> the partition's state
 * @param <E> the event type
 */
public abstract class PartitionActor<V, S, E> {

  private final PartitionContext context;

  /** Identity comes in the constructor: pass the framework's context on. */
  protected PartitionActor(PartitionContext context) {
    this.context = Objects.requireNonNull(context, "context");
  }

  /**
   * The state of a partition that has applied nothing. Called when the actor starts, before
   * recovery; must be cheap and side-effect free.
   */
  protected abstract S emptyState();

  /**
   * Decides the effects of one new record (never a redelivery, never a key duplicate). Called in the
   * actor, in offset order, with the state including the events of earlier records of the same
   * batch. Never called during recovery.
   *
   * <p>In {@code exactly-once} mode it must not perform external side effects: a batch whose write
   * fails is handed to it again. In {@code at-least-once} mode external calls belong here, made with
   * {@link #idempotencyKey}. A {@link io.fencepost.errors.RetriableException} rejects the batch for
   * a retry; any other exception rejects it as fatal; nothing of the batch is written either way.
   */
  protected abstract Effects<E> onRecord(S state, Inbound<V> record);

  /**
   * Applies one event to the state and returns the new state, leaving the given one unchanged. Runs
   * for every event when its batch is prepared <em>and again during every recovery</em>: it must be
   * deterministic and free of side effects (no I/O, no clock, no randomness).
   */
  protected abstract S applyEvent(S state, E event);

  /**
   * The record's business key: a producer-assigned identity that is the same on every copy of the
   * same logical message. Records whose key was applied within the key window are dropped. The
   * default reads the header named by {@code fencepost.partition-actor.key-window.header}, else the
   * {@value OutboxRecord#ID_HEADER} header an upstream Fencepost outbox relay sets (so chained
   * pipelines drop re-published copies); a header with an empty value is no key (every record with
   * an empty one would otherwise count as a copy of the first). Called
   * in the actor for each record at or above the stored offset; not called during recovery.
   */
  protected Optional<String> businessKey(Inbound<V> record) {
    String header = context.settings().keyHeader();
    Optional<String> key = header.isEmpty() ? Optional.empty() : record.header(header).filter(k -> !k.isEmpty());
    return key.isPresent() ? key : record.header(OutboxRecord.ID_HEADER).filter(k -> !k.isEmpty());
  }

  /**
   * Called once recovery has finished, with the recovered state and next offset (-1 when the
   * partition never applied a record). The default does nothing. Must not block.
   */
  protected void onRecovered(S state, long nextOffset) {
  }

  /**
   * Answers a {@link Query} from the partition's applied state: the state as the journal holds it
   * after recovery or after the latest durable write, never a batch's tentative state. The reply
   * must be of the query's type {@code R} and serializable like the query. The default refuses
   * every query.
   *
   * <p>Called outside the actor's write path (by the partition's query actor, on its own thread),
   * possibly while {@link #onRecord} runs for a later batch: it must read only the state it is given
   * (which is why state must be immutable), and must not block. An exception it throws fails the
   * query with {@link io.fencepost.errors.QueryFailedException}. In {@code at-most-once} mode a
   * state is offered to queries only once the effects of every record below its offset are journaled.
   */
  protected Object onQuery(S state, Query<?> query) {
    throw new UnsupportedOperationException(getClass().getName() + " answers no queries (a "
        + query.getClass().getName() + " was asked): override onQuery to answer it");
  }

  /** This actor's partition, settings, system and logger. */
  protected final PartitionContext context() {
    return context;
  }

  /** The actor's logger. */
  protected final Logger log() {
    return context.log();
  }

  /**
   * A stable idempotency key for external calls made for this record: its business key when it has
   * one, else {@code group-topic-partition-offset} of the record as first written
   * ({@link Inbound#originKey()}). Identical on every redelivery and every replay of the record.
   */
  protected final String idempotencyKey(Inbound<V> record) {
    return businessKey(record).orElseGet(record::originKey);
  }

  /**
   * The behavior of one partition's actor, spawned by the pipeline on the node its partition is
   * assigned to (or by a test).
   *
   * @param factory makes the user's actor from its context, e.g. {@code LedgerActor::new}
   */
  public static Behavior<PartitionCommand> behavior(PartitionId partition, PartitionActorSettings settings,
      Function<PartitionContext, ? extends PartitionActor<?, ?, ?>> factory) {
    return behavior(partition, settings, factory, view -> { });
  }

  /**
   * INTERNAL API: the behavior, publishing its {@link AppliedView} to {@code views} after recovery and
   * after every durable write (on the actor's thread; {@code views} must not block).
   */
  @InternalApi
  public static Behavior<PartitionCommand> behavior(PartitionId partition, PartitionActorSettings settings,
      Function<PartitionContext, ? extends PartitionActor<?, ?, ?>> factory, Consumer<AppliedView> views) {
    Objects.requireNonNull(partition, "partition");
    Objects.requireNonNull(views, "views");
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(factory, "factory");
    return Behaviors.setup(ctx -> {
      PartitionContext pc = new PartitionContext(partition, settings, ctx.getSystem(), ctx.getLog());
      return bind(ctx, pc, Objects.requireNonNull(factory.apply(pc), "factory returned null"), views);
    });
  }

  private static <V, S, E> Behavior<PartitionCommand> bind(
      ActorContext<PartitionCommand> ctx, PartitionContext pc,
      PartitionActor<V, S, E> actor, Consumer<AppliedView> views) {
    PartitionBehavior<V, S, E> behavior = new PartitionBehavior<>(ctx, pc, actor, views);
    // Outside the behavior's own restart supervision, which holds signals back while it backs off:
    // a stop forced meanwhile must still be seen.
    return Behaviors.intercept(() -> new BehaviorSignalInterceptor<PartitionCommand>() {
      @Override
      public Behavior<PartitionCommand> aroundSignal(TypedActorContext<PartitionCommand> c, Signal signal,
          BehaviorInterceptor.SignalTarget<PartitionCommand> target) {
        if (signal instanceof PostStop) {
          behavior.stopped();
        }
        return target.apply(c, signal);
      }
    }, behavior);
  }
}
