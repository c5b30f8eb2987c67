package io.fencepost.kafka;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.AppliedBatch;
import io.fencepost.OutboxRecord;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalGapException;
import io.fencepost.kafka.internal.PipelineMetrics;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.utils.Utils;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.apache.pekko.persistence.query.javadsl.CurrentEventsByPersistenceIdQuery;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.state.RecoveryCompleted;
import org.apache.pekko.persistence.typed.state.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.state.javadsl.DurableStateBehavior;
import org.apache.pekko.persistence.typed.state.javadsl.Effect;
import org.apache.pekko.persistence.typed.state.javadsl.SignalHandler;
import org.apache.pekko.stream.javadsl.Sink;

/**
 * Publishes one partition's outbox records from the journal to Kafka, at least once, in journal
 * order. Its state is the journal sequence number it has published up to, stored (as durable state)
 * only after every record up to it was acknowledged by the broker, and at most every
 * {@code store-position-every}: after a crash the next relay of the partition re-publishes from the
 * stored position, never skipping a record. Copies carry a stable {@link OutboxRecord#ID_HEADER}.
 *
 * <p>Rounds run on the blocking dispatcher (journal query, sends, acknowledgements); the actor only
 * sequences them.
 */
final class OutboxRelay extends DurableStateBehavior<OutboxRelay.Command, Long> {

  sealed interface Command {
  }

  /** Look for new outbox records (timer, or a batch that wrote some). */
  enum Wake implements Command {
    INSTANCE
  }

  /** Store the position reached and stop (the partition moved away or the pipeline stops). */
  enum Stop implements Command {
    INSTANCE
  }

  private record RoundDone(long upTo, int published, Throwable failure) implements Command {
  }

  private static final Object TIMER = "poll";
  private static final long ROUND_TIMEOUT_SECONDS = 60;

  private final ActorContext<Command> ctx;
  private final TimerScheduler<Command> timers;
  private final PartitionId partition;
  private final OutboxSettings settings;
  private final Producer<byte[], byte[]> producer;
  private final CurrentEventsByPersistenceIdQuery journal;
  private final Executor blocking;
  private long publishedUpTo = -1;
  private boolean roundRunning;
  private boolean wakeAgain;
  private long storedAtNanos = System.nanoTime();
  private long publishedTotal;
  /** The relay's position, read by the gauge {@code fencepost.outbox.relay.lag}. */
  private final AtomicLong position;

  private OutboxRelay(ActorContext<Command> ctx, TimerScheduler<Command> timers, PartitionId partition,
      OutboxSettings settings, Producer<byte[], byte[]> producer) {
    super(PersistenceId.ofUniqueId(OutboxRecord.relayPersistenceId(partition.persistenceId())));
    this.ctx = ctx;
    this.timers = timers;
    this.partition = partition;
    this.settings = settings;
    this.producer = producer;
    ActorSystem<?> system = ctx.getSystem();
    this.journal = PersistenceQuery.get(system.classicSystem())
        .getReadJournalFor(CurrentEventsByPersistenceIdQuery.class, settings.readJournalPluginId());
    this.blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    this.position = new PipelineMetrics(system).relayPosition(partition);
  }

  /**
   * The relay of one partition. A failed position store (database down, or a revision conflict with a
   * stale relay of the same partition on another node) restarts it with backoff; it then recovers the
   * stored position and publishes from there again.
   */
  static Behavior<Command> create(PartitionId partition, OutboxSettings settings, Producer<byte[], byte[]> producer) {
    Behavior<Command> relay = Behaviors.setup(ctx -> Behaviors.withTimers(timers -> new OutboxRelay(ctx, timers,
        partition, settings, producer)));
    return Behaviors.supervise(relay).onFailure(SupervisorStrategy.restartWithBackoff(
        java.time.Duration.ofSeconds(1), java.time.Duration.ofSeconds(30), 0.2));
  }

  @Override
  public Long emptyState() {
    return 0L;
  }

  @Override
  public String durableStateStorePluginId() {
    return settings.durableStatePluginId();
  }

  @Override
  public SignalHandler<Long> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(RecoveryCompleted.instance(), stored -> {
          publishedUpTo = stored;
          position.set(stored);
          ctx.getLog().info("[{}] outbox relay starts after journal entry {}", partition.shortName(), stored);
          timers.startTimerWithFixedDelay(TIMER, Wake.INSTANCE, settings.pollInterval());
          ctx.getSelf().tell(Wake.INSTANCE);
        })
        .build();
  }

  @Override
  public CommandHandler<Command, Long> commandHandler() {
    return newCommandHandlerBuilder().forAnyState()
        .onCommand(Wake.class, (stored, wake) -> {
          if (roundRunning) {
            wakeAgain = true;
          } else {
            startRound();
          }
          return Effect().none();
        })
        .onCommand(RoundDone.class, this::onRoundDone)
        .onCommand(Stop.class, (stored, stop) -> publishedUpTo > stored
            ? Effect().persist(publishedUpTo).thenStop() : Effect().stop())
        .build();
  }

  private void startRound() {
    roundRunning = true;
    long from = publishedUpTo + 1;
    CompletableFuture<RoundDone> round = CompletableFuture.supplyAsync(() -> publishFrom(from), blocking);
    ctx.pipeToSelf(round, (done, failure) -> failure == null ? done : new RoundDone(-1, 0, failure));
  }

  /** One round: reads journal entries from {@code from}, publishes their outbox records, waits for the acks. */
  private RoundDone publishFrom(long from) {
    String pid = partition.persistenceId();
    try {
      // Open-ended and limited, not a window: the first entry read shows a hole right after the position.
      List<EventEnvelope> entries = journal
          .currentEventsByPersistenceId(pid, from, Long.MAX_VALUE)
          .take(settings.maxEntriesPerRound())
          .runWith(Sink.seq(), ctx.getSystem())
          .toCompletableFuture().get(ROUND_TIMEOUT_SECONDS, TimeUnit.SECONDS);
      JournalGapException.check("outbox relay of " + partition.shortName(), pid, from,
          entries.stream().map(EventEnvelope::sequenceNr).toList(),
          last -> "stop the pipeline and store " + last + " as the relay's position (durable state ["
              + OutboxRecord.relayPersistenceId(pid) + "]); the outbox records of those entries are then never published");
      List<Future<RecordMetadata>> acks = new ArrayList<>();
      long upTo = from - 1;
      for (EventEnvelope entry : entries) {
        List<OutboxRecord> outbox = AppliedBatch.from(entry.event()).map(AppliedBatch::outbox).orElse(List.of());
        for (int i = 0; i < outbox.size(); i++) {
          acks.add(producer.send(toKafka(outbox.get(i), OutboxRecord.id(pid, entry.sequenceNr(), i))));
        }
        upTo = entry.sequenceNr();
      }
      for (Future<RecordMetadata> ack : acks) {
        ack.get(ROUND_TIMEOUT_SECONDS, TimeUnit.SECONDS);
      }
      return new RoundDone(upTo, acks.size(), null);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new RoundDone(-1, 0, e);
    } catch (Exception e) {
      return new RoundDone(-1, 0, e);
    }
  }

  private ProducerRecord<byte[], byte[]> toKafka(OutboxRecord r, String id) {
    byte[] idBytes = id.getBytes(StandardCharsets.UTF_8);
    byte[] key = r.key().map(k -> k.getBytes(StandardCharsets.UTF_8)).orElse(null);
    // Without a key, pick the partition from the id: every copy of the record lands in the same
    // partition, where the downstream key window can drop it.
    Integer kafkaPartition = key != null ? null
        : Utils.toPositive(Utils.murmur2(idBytes)) % producer.partitionsFor(r.topic()).size();
    ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(r.topic(), kafkaPartition, key, r.value());
    out.headers().add(OutboxRecord.ID_HEADER, idBytes);
    return out;
  }

  private Effect<Long> onRoundDone(Long stored, RoundDone done) {
    roundRunning = false;
    if (done.failure() instanceof JournalGapException gap) {
      // Never skipped. The relay restarts (with backoff, at most every 30 s) and reads its stored
      // position again: a previous relay of the partition may have stored a newer one after this
      // one recovered (a hand-over). A real hole stays, and is reported at each attempt.
      ctx.getLog().error("[{}] outbox relay stopped publishing; it restarts from its stored position: {}",
          partition.shortName(), gap.getMessage());
      throw gap;
    }
    if (done.failure() != null) {
      // Nothing of this round counts: the next round starts from the same entry (copies already
      // sent are dropped downstream by their id).
      ctx.getLog().warn("[{}] outbox relay round from entry {} failed, retrying in {} ms: {}", partition.shortName(),
          publishedUpTo + 1, settings.pollInterval().toMillis(), done.failure().toString());
      return Effect().none();
    }
    boolean progressed = done.upTo() > publishedUpTo;
    if (progressed) {
      publishedUpTo = done.upTo();
      position.set(publishedUpTo);
      if (publishedTotal == 0 && done.published() > 0) {
        ctx.getLog().info("[{}] outbox relay published its first {} record(s), up to entry {}", partition.shortName(),
            done.published(), publishedUpTo);
      }
      publishedTotal += done.published();
      if (done.published() > 0) {
        ctx.getLog().debug("[{}] outbox relay published {} record(s) up to entry {} ({} in all)",
            partition.shortName(), done.published(), publishedUpTo, publishedTotal);
      }
    }
    if (progressed || wakeAgain) {
      wakeAgain = false;
      ctx.getSelf().tell(Wake.INSTANCE);   // more may be waiting: go on without waiting for the timer
    }
    if (publishedUpTo > stored
        && System.nanoTime() - storedAtNanos >= settings.storePositionEvery().toNanos()) {
      storedAtNanos = System.nanoTime();
      return Effect().persist(publishedUpTo);
    }
    return Effect().none();
  }
}
