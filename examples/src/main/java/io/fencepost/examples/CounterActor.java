package io.fencepost.examples;

import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.JacksonSerializable;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;

/**
 * Counters, <b>at-least-once</b> with a naturally idempotent effect (run it with
 * {@code delivery-mode = at-least-once}): each record carries an entity's new value and version,
 * and the handler writes it to an external store only if the version is newer. A crash after the
 * external write and before the journal write repeats the write on redelivery, which changes
 * nothing: versioned upserts need no deduplication state of their own. This fits entity-state
 * propagation, read models and search indexing; it does not fit relative effects (increments,
 * balances), which need the exactly-once ledger.
 */
public class CounterActor extends PartitionActor<CounterActor.Update, Long, CounterActor.Written> {

  /** The input: entity, version, value. */
  public record Update(String entity, long version, long value) implements JacksonSerializable {
  }

  /** The event journaled after the external write. */
  public record Written(String entity, long version, boolean changed) implements JacksonSerializable {
  }

  private final VersionedStore store;

  public CounterActor(PartitionContext context, VersionedStore store) {
    super(context);
    this.store = store;
  }

  @Override
  protected Long emptyState() {
    return 0L;
  }

  @Override
  protected Effects<Written> onRecord(Long writes, Inbound<Update> in) {
    Update u = in.value();
    boolean changed = store.writeIfNewer(u.entity(), u.version(), u.value());   // the external effect, first
    return Effects.persist(new Written(u.entity(), u.version(), changed));
  }

  @Override
  protected Long applyEvent(Long writes, Written w) {
    return writes + 1;
  }
}
