package io.fencepost.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.AppliedBatch;
import io.fencepost.OutboxRecord;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalGapException;
import io.fencepost.kafka.internal.PipelineMetrics;
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

  /**
   * A round's result: {@code upTo} is the last entry all of whose records were acknowledged (every
   * entry before it too), {@code acked} how many records of the entry after it were (in order).
   */
  private record RoundDone(long round, long upTo, int acked, int published, Throwable failure, boolean sending,
      RelayProducer.Handle producer) implements Command {
  }

  private static final Object TIMER = "poll";
  private static final Object RETRY = "retry";
  private static final Duration REPEAT_ERROR = Duration.ofMinutes(1);
  /** Consecutive failed rounds after which the producer is replaced even though it answers. */
  private static final int REBUILD_EVERY = 5;

  private final ActorContext<Command> ctx;
  private final TimerScheduler<Command> timers;
  private final PartitionId partition;
  private final OutboxSettings settings;
  private final RelayProducer producers;
  private final Backoff backoff;
  private final CurrentEventsByPersistenceIdQuery journal;
  private final Executor blocking;
  private final PipelineMetrics metrics;
  /** Set when the registry stops this relay: a restarted incarnation (after a failed store) stops too. */
  private final AtomicBoolean stopRequested;
  /** The round in flight; a result of another (an earlier incarnation's) is ignored. */
  private long round = ThreadLocalRandom.current().nextLong();
  private long publishedUpTo = -1;
  /** Records of entry {@code publishedUpTo + 1} already acknowledged (in memory: a crash sends them again). */
  private int ackedInNext;
  private boolean roundRunning;
  private boolean wakeAgain;
  /** Consecutive failed rounds; while > 0 rounds send one record at a time and wait for each. */
  private int failures;
  private long failingSinceNanos;
  /** When the round in flight started: a failure's time counts from there (a round may wait delivery.timeout.ms). */
  private long roundStartedNanos;
  private long errorLoggedNanos;
  private long storedAtNanos = System.nanoTime();
  private long publishedTotal;
  /** The relay's position, read by the gauge {@code fencepost.outbox.relay.lag}. */
  private final AtomicLong position;
  /** 1 while the relay has failed for longer than {@code error-after}, read by {@code fencepost.outbox.relay.failing}. */
  private final AtomicLong failing;

  private OutboxRelay(ActorContext<Command> ctx, TimerScheduler<Command> timers, PartitionId partition,
      OutboxSettings settings, RelayProducer producers, Backoff backoff, AtomicBoolean stopRequested) {
    super(PersistenceId.ofUniqueId(OutboxRecord.relayPersistenceId(partition.persistenceId())));
    this.ctx = ctx;
    this.stopRequested = stopRequested;
    this.timers = timers;
    this.partition = partition;
    this.settings = settings;
    this.producers = producers;
    this.backoff = backoff;
    ActorSystem<?> system = ctx.getSystem();
    this.journal = PersistenceQuery.get(system.classicSystem())
        .getReadJournalFor(CurrentEventsByPersistenceIdQuery.class, settings.readJournalPluginId());
    this.blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    this.metrics = new PipelineMetrics(system);
    this.position = metrics.relayPosition(partition);
    this.failing = metrics.relayFailing(partition);
  }

  /**
   * The relay of one partition. A failed position store (database down, or a revision conflict with a
   * stale relay of the same partition on another node) restarts it with backoff; it then recovers the
   * stored position and publishes from there again. A failed round is retried after {@code backoff}
   * (growing with each failure), one record at a time until a round succeeds.
   */
  static Behavior<Command> create(PartitionId partition, OutboxSettings settings, RelayProducer producers,
      Backoff backoff, AtomicBoolean stopRequested) {
    Behavior<Command> relay = Behaviors.setup(ctx -> Behaviors.withTimers(timers -> new OutboxRelay(ctx, timers,
        partition, settings, producers, backoff, stopRequested)));
    return Behaviors.supervise(relay).onFailure(SupervisorStrategy.restartWithBackoff(
        Duration.ofSeconds(1), Duration.ofSeconds(30), 0.2));
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
          failing.set(0);
          if (stopRequested.get()) {
            ctx.getSelf().tell(Stop.INSTANCE);   // restarted after its Stop's store failed: the partition is gone
            return;
          }
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
          } else if (failures == 0 || !timers.isTimerActive(RETRY)) {   // a failed round waits out its backoff
            startRound();
          }
          return Effect().none();
        })
        .onCommand(RoundDone.class, this::onRoundDone)
        .onCommand(Stop.class, (stored, stop) -> {
          failing.set(0);   // the partition's relay runs elsewhere now, or not at all
          return publishedUpTo > stored ? Effect().persist(publishedUpTo).thenStop() : Effect().stop();
        })
        .build();
  }

  private void startRound() {
    timers.cancel(RETRY);
    roundRunning = true;
    long from = publishedUpTo + 1;
    int skip = ackedInNext;
    boolean careful = failures > 0;
    RelayProducer.Handle producer = producers.current();
    long id = ++round;
    roundStartedNanos = System.nanoTime();
    CompletableFuture<RoundDone> running = CompletableFuture.supplyAsync(
        () -> new Round(id, from, skip, careful, producer).run(), blocking);
    ctx.pipeToSelf(running, (done, failure) -> failure == null ? done
        : new RoundDone(id, from - 1, skip, 0, failure, false, producer));
  }

  /**
   * One round from entry {@code from} (its first {@code skip} records already acknowledged): reads
   * journal entries, publishes their outbox records and waits for the acknowledgements, in order.
   * What counts is the acknowledged prefix: a failure stops the round there, and the next starts
   * after it. A careful round (after a failure) reads one entry and sends one record at a time, each
   * after the previous one's acknowledgement, so that a record that cannot be published costs no
   * copies of the records after it.
   */
  private final class Round {
    private final long id;
    private final long from;
    private final int skip;
    private final boolean careful;
    private final RelayProducer.Handle handle;
    private final String pid = partition.persistenceId();
    private long upTo;
    private int acked;
    private int published;
    /** Past the journal read: a failure from here on is the producer's. */
    private boolean sending;

    Round(long id, long from, int skip, boolean careful, RelayProducer.Handle handle) {
      this.id = id;
      this.from = from;
      this.skip = skip;
      this.careful = careful;
      this.handle = handle;
      this.upTo = from - 1;
      this.acked = skip;
    }

    RoundDone run() {
      try {
        // Open-ended and limited, not a window: the first entry read shows a hole right after the position.
        List<EventEnvelope> entries = journal
            .currentEventsByPersistenceId(pid, from, Long.MAX_VALUE)
            .take(careful ? 1 : settings.maxEntriesPerRound())
            .completionTimeout(producers.ackTimeout())   // a query that hangs fails (and is cancelled)
            .runWith(Sink.seq(), ctx.getSystem())
            .toCompletableFuture().get();
        sending = true;
        JournalGapException.check("outbox relay of " + partition.shortName(), pid, from,
            entries.stream().map(EventEnvelope::sequenceNr).toList(),
            last -> "stop the pipeline and store " + last + " as the relay's position (durable state ["
                + OutboxRecord.relayPersistenceId(pid) + "]); the outbox records of those entries are then never published");
        List<List<Future<RecordMetadata>>> sent = new ArrayList<>();
        Exception sendFailure = null;
        for (EventEnvelope entry : entries) {
          List<OutboxRecord> outbox = AppliedBatch.from(entry.event()).map(AppliedBatch::outbox).orElse(List.of());
          List<Future<RecordMetadata>> acks = new ArrayList<>();
          sent.add(acks);
          try {
            for (int i = first(entry); i < outbox.size(); i++) {
              Future<RecordMetadata> ack = handle.producer().send(toKafka(handle, outbox.get(i),
                  OutboxRecord.id(pid, entry.sequenceNr(), i)));
              acks.add(ack);
              if (careful) {
                settle(ack);
              } else if (ack.isDone()) {
                ack.get();   // refused at once (no metadata for the topic within max.block.ms, too large): stop
              }
            }
          } catch (RuntimeException | ExecutionException e) {   // send() refused the record
            sendFailure = e;
            break;
          }
        }
        for (int e = 0; e < sent.size(); e++) {
          if (!careful) {
            for (Future<RecordMetadata> ack : sent.get(e)) {
              settle(ack);
            }
          }
          if (sendFailure != null && e == sent.size() - 1) {
            throw sendFailure;   // its acknowledged prefix counted, its refused record not
          }
          upTo = entries.get(e).sequenceNr();
          acked = 0;
        }
        return new RoundDone(id, upTo, 0, published, null, true, handle);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return new RoundDone(id, upTo, acked, published, e, sending, handle);
      } catch (Exception e) {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return new RoundDone(id, upTo, acked, published, cause, sending, handle);
      }
    }

    /** The first record of {@code entry} to send: past those already acknowledged. */
    private int first(EventEnvelope entry) {
      return entry.sequenceNr() == from ? skip : 0;
    }

    /** Waits for one acknowledgement (those before it in the round came first) and counts it. */
    private void settle(Future<RecordMetadata> ack) throws Exception {
      ack.get(producers.ackTimeout().toMillis(), TimeUnit.MILLISECONDS);
      acked++;
      published++;
    }
  }

  private static ProducerRecord<byte[], byte[]> toKafka(RelayProducer.Handle handle, OutboxRecord r, String id) {
    byte[] idBytes = id.getBytes(StandardCharsets.UTF_8);
    byte[] key = r.key().map(k -> k.getBytes(StandardCharsets.UTF_8)).orElse(null);
    // Without a key, pick the partition from the id: every copy of the record lands in the same
    // partition, where the downstream key window can drop it.
    Integer kafkaPartition = key != null ? null
        : Utils.toPositive(Utils.murmur2(idBytes)) % handle.producer().partitionsFor(r.topic()).size();
    ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(r.topic(), kafkaPartition, key, r.value());
    out.headers().add(OutboxRecord.ID_HEADER, idBytes);
    return out;
  }

  private Effect<Long> onRoundDone(Long stored, RoundDone done) {
    if (done.round() != round) {
      return Effect().none();   // an earlier incarnation's round: its result says nothing of this one's position
    }
    roundRunning = false;
    if (done.failure() instanceof JournalGapException gap) {
      // Never skipped. The relay restarts (with backoff, at most every 30 s) and reads its stored
      // position again: a previous relay of the partition may have stored a newer one after this
      // one recovered (a hand-over). A real hole stays, and is reported at each attempt.
      ctx.getLog().error("[{}] outbox relay stopped publishing; it restarts from its stored position: {}",
          partition.shortName(), gap.getMessage());
      throw gap;
    }
    boolean progressed = done.upTo() > publishedUpTo || done.acked() > ackedInNext;
    if (done.upTo() > publishedUpTo) {
      publishedUpTo = done.upTo();
      position.set(publishedUpTo);
    }
    if (done.upTo() == publishedUpTo) {
      ackedInNext = done.acked();   // records of entry publishedUpTo + 1 acknowledged
    }
    publishedTotal += done.published();
    if (done.failure() != null) {
      onFailedRound(done);
    } else {
      if (failures > 0) {
        ctx.getLog().info("[{}] outbox relay publishes again, up to entry {}, after {} failed round(s) in {} s",
            partition.shortName(), publishedUpTo, failures, (System.nanoTime() - failingSinceNanos) / 1_000_000_000);
        failures = 0;
        failing.set(0);
        progressed = true;   // leave the careful mode at once
      } else if (publishedTotal == done.published() && done.published() > 0) {
        ctx.getLog().info("[{}] outbox relay published its first {} record(s), up to entry {}", partition.shortName(),
            done.published(), publishedUpTo);
      }
      if (progressed || wakeAgain) {
        wakeAgain = false;
        ctx.getSelf().tell(Wake.INSTANCE);   // more may be waiting: go on without waiting for the timer
      }
    }
    if (publishedUpTo > stored
        && System.nanoTime() - storedAtNanos >= settings.storePositionEvery().toNanos()) {
      storedAtNanos = System.nanoTime();
      return Effect().persist(publishedUpTo);
    }
    return Effect().none();
  }

  /**
   * Records before the failing one count as published; the round is tried again after a backoff on a
   * new producer, carefully. The failure is logged at WARN, and at ERROR (then once a minute) once
   * publishing has failed for {@code error-after}.
   */
  private void onFailedRound(RoundDone done) {
    long now = System.nanoTime();
    wakeAgain = false;
    if (done.producer().generation() != producers.current().generation()) {
      // Another relay replaced the producer under this round (its sends failed as the producer closed):
      // not this relay's failure; the round runs again on the new producer.
      timers.startSingleTimer(RETRY, Wake.INSTANCE, backoff.delay(Math.max(0, failures - 1)));
      return;
    }
    if (failures == 0) {
      failingSinceNanos = roundStartedNanos;
    }
    failures++;
    Throwable cause = done.failure();
    boolean unsettled = done.sending() && cause instanceof TimeoutException;
    String what = unsettled
        ? "no acknowledgement within " + producers.ackTimeout().toSeconds() + " s (a wedged producer)"
        : (done.sending() ? "" : "reading the journal: ") + cause;
    metrics.relayFailed(partition, cause);
    if (done.sending() && (unsettled || failures % REBUILD_EVERY == 0)) {
      // A producer that settles no send is wedged; one that keeps failing may be (sequence numbers
      // out of step after expired batches): a new one starts clean.
      producers.rebuild(done.producer(), "[" + partition.shortName() + "] " + what);
    }
    Duration delay = backoff.delay(failures - 1);
    long failingFor = now - failingSinceNanos;
    String topics = "entry " + (publishedUpTo + 1) + (ackedInNext > 0 ? " (after its first " + ackedInNext + " record(s))" : "");
    if (failingFor >= settings.errorAfter().toNanos()) {
      failing.set(1);
      if (errorLoggedNanos == 0 || now - errorLoggedNanos >= REPEAT_ERROR.toNanos()) {
        errorLoggedNanos = now;
        ctx.getLog().error("[{}] outbox relay cannot publish the records of journal {} for {} s ({} failed rounds): {}. "
            + "Later outbox records of this partition wait behind it. Fix the cause (the outbox topic's existence, "
            + "max.message.bytes, ACLs; producer-kafka-clients) and the relay goes on by itself; retrying in {} ms",
            partition.shortName(), topics, failingFor / 1_000_000_000, failures, what, delay.toMillis());
      }
    } else {
      ctx.getLog().warn("[{}] outbox relay round from journal {} failed, retrying in {} ms, one record at a time: {}",
          partition.shortName(), topics, delay.toMillis(), what);
    }
    timers.startSingleTimer(RETRY, Wake.INSTANCE, delay);
  }
}
