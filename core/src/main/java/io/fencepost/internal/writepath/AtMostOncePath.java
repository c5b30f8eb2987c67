package io.fencepost.internal.writepath;

import java.util.ArrayDeque;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.ObjLongConsumer;

import io.fencepost.BatchOutcome;
import io.fencepost.Inbound;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.PartitionState;
import io.fencepost.internal.WindowClock;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.typed.javadsl.Effect;
import org.apache.pekko.persistence.typed.javadsl.EffectBuilder;
import org.apache.pekko.persistence.typed.javadsl.EffectFactories;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.slf4j.Logger;

/**
 * The at-most-once path, in two steps: a batch's offset is written first (with the effects of earlier
 * batches that wait, see {@link AtMostOnceEffects}), then its handlers run and their effects wait for
 * the next write. A Stop waits for handlers whose offset is durable and for the write of waiting
 * effects. Used on the actor's thread only.
 */
public final class AtMostOncePath<V, S, E> {

  private final EffectFactories<BatchEvent, PartitionState<S>> effect;
  private final PartitionId partition;
  private final PartitionActorSettings settings;
  private final String incarnation;
  private final PendingWrite<S> pending;
  private final Standing standing;
  private final SelfMessages self;
  private final PartitionMetrics metrics;
  private final WindowClock clock;
  private final Consumer<PartitionState<S>> afterWrite;
  // Publishes a journaled state with the offset below which every record's effects are in it.
  private final ObjLongConsumer<PartitionState<S>> settledBelow;
  // Effects whose handlers ran, waiting for a write (the next batch's, or their own).
  private final AtMostOnceEffects<V, S, E> unjournaled;
  // Batches whose offset is durable but whose handlers have not run yet (a Stop waits for them).
  private int acceptedNotRun;
  // Their lowest offsets, in the order their handlers run (Long.MAX_VALUE: a batch without records).
  private final ArrayDeque<Long> notRunFrom = new ArrayDeque<>();
  // A Stop waits for the write of waiting effects; set while it does (a failed write retries).
  private boolean stopAfterWrite;

  public AtMostOncePath(EffectFactories<BatchEvent, PartitionState<S>> effect, PartitionId partition,
      PartitionActorSettings settings, String incarnation, UserHandlers<V, S, E> handlers, PendingWrite<S> pending,
      Standing standing, SelfMessages self, PartitionMetrics metrics, WindowClock clock,
      Consumer<PartitionState<S>> afterWrite, ObjLongConsumer<PartitionState<S>> settledBelow, Logger log) {
    this.effect = effect;
    this.partition = partition;
    this.settings = settings;
    this.incarnation = incarnation;
    this.pending = pending;
    this.standing = standing;
    this.self = self;
    this.metrics = metrics;
    this.clock = clock;
    this.afterWrite = afterWrite;
    this.settledBelow = settledBelow;
    this.unjournaled = new AtMostOnceEffects<>(handlers, log, partition.shortName());
  }

  /** The first step: the batch's offset (and the waiting effects) in one write; its handlers run after it. */
  public ReplyEffect<BatchEvent, PartitionState<S>> accept(PartitionState<S> state, BatchSelector.Selection<V> sel,
      ActorRef<BatchOutcome> replyTo) {
    // Once this write is durable, every record below this offset has its effects journaled: the
    // write carries every effect waiting, and only batches whose handlers have not run lack theirs.
    long settled = settledBelow(state.nextOffset());
    CarriedEffects<S> carried = unjournaled.take();
    BatchEvent accept = new BatchEvent(incarnation, state.nextOffset(), sel.nextOffset,
        clock.now(state.lastWriteMillis()), carried == null ? List.of() : carried.events(), sel.freshDigests(),
        sel.fresh.size(), sel.droppedByKey, sel.deadLetters, sel.unparked,
        carried == null ? List.of() : carried.outbox(), List.of(), ExactlyOnceFold.toArray(sel.replayed));
    BatchOutcome.Applied outcome = new BatchOutcome.Applied(partition, sel.nextOffset, sel.fresh.size(),
        sel.droppedRedelivery, sel.droppedByKey, true, sel.deadLetters.size(), 0);
    List<Inbound<?>> accepted = List.copyOf(sel.fresh);
    unjournaled.writing(carried);
    // Their latency is recorded once their effects are journaled (see effectsDurable), not now.
    pending.startBatch(state, accept, carried == null ? state.user() : carried.user(), outcome, replyTo, List.of(),
        new long[0], accepted);
    return effect.persist(accept)
        .thenRun(s -> {
          // Second step: effects after the offset is durable. A crash before it completes loses them.
          // Asked for first, so that the state is not published as settled (effectsSettled).
          runLater(accepted);
          effectsDurable(unjournaled.committed());
          afterWrite.accept(s);
          settledBelow.accept(s, settled);   // a busy partition's queries still see its settled state advance
          pending.written(metrics);
        })
        .thenReply(replyTo, s -> outcome);
  }

  /** The second step: the handlers of records whose offset is durable run; their effects wait. */
  public Effect<BatchEvent, PartitionState<S>> runAccepted(PartitionState<S> state, List<Inbound<?>> records) {
    acceptedNotRun = Math.max(0, acceptedNotRun - 1);
    notRunFrom.poll();
    if (standing.out()) {
      unjournaled.skipped(records, standing.whyOut());
      return effect.unstashAll();
    }
    if (unjournaled.run(state.user(), state.batches(), records, ts -> metrics.durable(ts, System.currentTimeMillis()))) {
      if (settings.atMostOnceLinger().isZero()) {
        return writeWaiting(state).thenUnstashAll();
      }
      scheduleFlush();
    }
    return effect.unstashAll();   // a Stop that waited for these handlers
  }

  /** No batch's write carried the waiting effects named {@code generation} within the linger: written alone. */
  public Effect<BatchEvent, PartitionState<S>> flush(PartitionState<S> state, long generation) {
    if (generation != unjournaled.generation() || !unjournaled.waiting()) {
      return effect.none();   // carried by a batch's write meanwhile
    }
    if (standing.out()) {
      unjournaled.lose(unjournaled.take(), standing.whyOut());
      return effect.none();
    }
    return writeWaiting(state).thenUnstashAll();
  }

  /** A Stop waits for handlers whose offset is durable, and for the write of their effects. */
  public Effect<BatchEvent, PartitionState<S>> stop(PartitionState<S> state) {
    if (acceptedNotRun > 0) {
      return effect.stash();
    }
    if (unjournaled.waiting() && !standing.out()) {
      stopAfterWrite = true;
      return writeWaiting(state).thenRun(s -> {
        stopAfterWrite = false;
        self.stop();
      });
    }
    return effect.stop();
  }

  /** The actor stopped, however: effects not journaled are logged as lost. */
  public void stopped() {
    unjournaled.stopped(acceptedNotRun, pending.accepted());
  }

  /**
   * After a restart: the effects a failed write carried wait again, are done, or are lost (see
   * {@link AtMostOnceEffects#recovered}).
   */
  void recovered(PartitionState<S> state) {
    if (unjournaled.recovered(state.batches(), state.lastIncarnation(), incarnation, this::effectsDurable)) {
      scheduleFlush();
    }
  }

  /** After a restart: a Stop whose write of waiting effects failed tries again. */
  void resendStop() {
    if (stopAfterWrite) {
      stopAfterWrite = false;
      self.stop();
    }
  }

  /** The handlers of {@code records}, whose offset write is durable, run next. */
  void runLater(List<Inbound<?>> records) {
    acceptedNotRun++;
    notRunFrom.add(records.stream().mapToLong(Inbound::offset).min().orElse(Long.MAX_VALUE));
    self.runAccepted(records);
  }

  /**
   * Whether the effects of every record below the stored offset are journaled: no accepted
   * handler waits to run, no effect waits for a write or is being written. Until then the stored state lacks effects of
   * records below its offset, and is not published to queries.
   */
  public boolean effectsSettled() {
    return acceptedNotRun == 0 && !unjournaled.waiting() && !unjournaled.inWrite();
  }

  /**
   * The offset below which every record's effects are journaled once a write carrying every waiting
   * effect is durable: {@code nextOffset}, or the lowest offset of a batch whose handlers have not run.
   */
  private long settledBelow(long nextOffset) {
    long below = nextOffset;
    for (long from : notRunFrom) {
      below = Math.min(below, from);
    }
    return below;
  }

  /** What waits for a write and what an offset write that failed left unrun. */
  AtMostOnceEffects<V, S, E> effects() {
    return unjournaled;
  }

  private void scheduleFlush() {
    self.flushEffects(settings.atMostOnceLinger(), unjournaled.generation());
  }

  /** The effects of these records are journaled now (the end-to-end latency ends here). */
  private void effectsDurable(CarriedEffects<S> carried) {
    if (carried != null) {
      long now = System.currentTimeMillis();
      carried.forEachTimestamp(ts -> metrics.durable(ts, now));
    }
  }

  /** The waiting effects in a write of their own (the offset does not move). */
  private EffectBuilder<BatchEvent, PartitionState<S>> writeWaiting(PartitionState<S> state) {
    CarriedEffects<S> carried = unjournaled.take();
    BatchEvent effects = new BatchEvent(incarnation, state.nextOffset(), state.nextOffset(),
        clock.now(state.lastWriteMillis()), carried.events(), new long[0], 0, 0, List.of(), List.of(),
        carried.outbox(), List.of(), new long[0]);
    pending.startUnbatched(effects, carried.user());
    unjournaled.writing(carried);
    return effect.persist(effects).thenRun(s -> {
      effectsDurable(unjournaled.committed());   // first: the state published after the write is settled
      afterWrite.accept(s);
      pending.clear();
    });
  }
}
