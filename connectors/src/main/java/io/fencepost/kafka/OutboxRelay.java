package io.fencepost.kafka;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.OutboxRecord;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalGapException;
import io.fencepost.kafka.internal.PipelineMetrics;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.apache.pekko.persistence.query.javadsl.CurrentEventsByPersistenceIdQuery;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.state.RecoveryCompleted;
import org.apache.pekko.persistence.typed.state.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.state.javadsl.DurableStateBehavior;
import org.apache.pekko.persistence.typed.state.javadsl.Effect;
import org.apache.pekko.persistence.typed.state.javadsl.SignalHandler;

/**
 * Publishes one partition's outbox records from the journal to Kafka, in journal order. Its state is
 * the journal sequence number it has published up to, stored (as durable state) only after every
 * record up to it was acknowledged by the broker, and at most every {@code store-position-every}.
 * At least once: after a crash the next relay of the partition re-publishes from the stored position,
 * never skipping a record; copies carry a stable {@link OutboxRecord#ID_HEADER}. Exactly once
 * ({@link RelayTransactions}): each round is a Kafka transaction with the relay's position, the
 * stored one is only a lower bound (never ahead of the committed one), and a relay fenced by a later
 * relay of its partition pauses, and goes on only if it was not stopped meanwhile.
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
  record RoundDone(long round, long upTo, int acked, int published, Throwable failure, boolean sending,
      HealingProducer.Handle producer) implements Command {
  }

  private static final Object TIMER = "poll";
  private static final Object RETRY = "retry";
  private static final Object PACE = "transaction-interval";
  private static final Duration REPEAT_ERROR = Duration.ofMinutes(1);
  /** How long a fenced relay waits before it starts again (a zombie's node sees it lost the partition sooner). */
  private static final Duration FENCED_PAUSE = Duration.ofSeconds(10);
  /** Consecutive failed rounds after which the producer is replaced even though it answers. */
  private static final int REBUILD_EVERY = 5;

  private final ActorContext<Command> ctx;
  private final TimerScheduler<Command> timers;
  private final PartitionId partition;
  private final OutboxSettings settings;
  private final HealingProducer producers;
  /** Exactly once: the relay's transactional producer; null at least once. */
  private final RelayTransactions transactions;
  /** A Stop that came while a round ran: the relay stops when the round is done. */
  private boolean stopping;
  /** Rounds fenced by a later relay since the last that was not. */
  private int fencedInARow;
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
  // The last round read max-entries-per-round entries: more wait, and the next round is not paced
  // (pacing caps how often a relay commits, never how much it publishes).
  private boolean lastRoundFull;
  private long errorLoggedNanos;
  private long storedAtNanos;
  private final Ticker ticker;
  private long publishedTotal;
  /** The relay's position, read by the gauge {@code fencepost.outbox.relay.lag}. */
  private final AtomicLong position;
  /** 1 while the relay has failed for longer than {@code error-after}, read by {@code fencepost.outbox.relay.failing}. */
  private final AtomicLong failing;

  private OutboxRelay(ActorContext<Command> ctx, TimerScheduler<Command> timers, PartitionId partition,
      OutboxSettings settings, HealingProducer producers, RelayTransactions transactions, Backoff backoff,
      AtomicBoolean stopRequested, Ticker ticker) {
    super(PersistenceId.ofUniqueId(OutboxRecord.relayPersistenceId(partition.persistenceId())));
    this.transactions = transactions;
    this.ticker = ticker;
    this.storedAtNanos = ticker.nanoTime();
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
   * (growing with each failure), one record at a time until a round succeeds. Exactly once when
   * {@code transactions} gives each incarnation its transactional producer (null: at least once).
   */
  static Behavior<Command> create(PartitionId partition, OutboxSettings settings, HealingProducer producers,
      java.util.function.Supplier<RelayTransactions> transactions, Backoff backoff, AtomicBoolean stopRequested,
      Ticker ticker) {
    Behavior<Command> relay = Behaviors.setup(ctx -> Behaviors.withTimers(timers -> new OutboxRelay(ctx, timers,
        partition, settings, producers, transactions.get(), backoff, stopRequested, ticker)));
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
        .onSignal(PostStop.instance(), stored -> closeTransactions())
        .onSignal(PreRestart.instance(), stored -> closeTransactions())
        .build();
  }

  /** Closes the transactional producer, off the actor's thread (a round in flight then fails, committing nothing). */
  private void closeTransactions() {
    if (transactions != null) {
      CompletableFuture.runAsync(transactions::close, blocking);
    }
  }

  @Override
  public CommandHandler<Command, Long> commandHandler() {
    return newCommandHandlerBuilder().forAnyState()
        .onCommand(Wake.class, (stored, wake) -> {
          if (roundRunning) {
            wakeAgain = true;
          } else if (failures == 0 && transactions != null && !lastRoundFull && startedRecently()) {
            if (!timers.isTimerActive(PACE)) {   // exactly-once: one transaction per transaction-interval at most
              timers.startSingleTimer(PACE, Wake.INSTANCE, Duration.ofNanos(settings.transactionInterval().toNanos()
                  - (ticker.nanoTime() - roundStartedNanos)));
            }
          } else if (failures == 0 || !timers.isTimerActive(RETRY)) {   // a failed round waits out its backoff
            startRound();
          }
          return Effect().none();
        })
        .onCommand(RoundDone.class, this::onRoundDone)
        .onCommand(Stop.class, (stored, stop) -> {
          failing.set(0);   // the partition's relay runs elsewhere now, or not at all
          if (transactions != null && roundRunning) {
            stopping = true;   // its transaction commits or aborts first; then the relay stops
            return Effect().none();
          }
          return stopNow(stored);
        })
        .build();
  }

  private Effect<Long> stopNow(Long stored) {
    return publishedUpTo > stored ? Effect().persist(publishedUpTo).thenStop() : Effect().stop();
  }

  /** Whether the last round started less than {@code transaction-interval} ago (none started: no). */
  private boolean startedRecently() {
    return roundStartedNanos != 0 && ticker.nanoTime() - roundStartedNanos < settings.transactionInterval().toNanos();
  }

  private void startRound() {
    timers.cancel(RETRY);
    timers.cancel(PACE);
    roundRunning = true;
    long from = publishedUpTo + 1;
    int skip = ackedInNext;
    boolean careful = failures > 0;
    long id = ++round;
    roundStartedNanos = ticker.nanoTime();
    if (transactions != null) {
      int entries = careful ? 1 : settings.maxEntriesPerRound();
      Duration readLimit = transactions.readLimit();
      CompletableFuture<RoundDone> running = CompletableFuture.supplyAsync(() -> transactionalRound(id, from,
          entries, readLimit), blocking);
      ctx.pipeToSelf(running, (done, failure) -> failure == null ? done
          : new RoundDone(id, from - 1, 0, 0, failure, false, null));
      return;
    }
    HealingProducer.Handle producer = producers.current();
    CompletableFuture<RoundDone> running = CompletableFuture.supplyAsync(() -> new RelayRound(ctx.getSystem(),
        partition, settings, producers, journal, id, from, skip, careful, producer).run(), blocking);
    ctx.pipeToSelf(running, (done, failure) -> failure == null ? done
        : new RoundDone(id, from - 1, skip, 0, failure, false, producer));
  }

  /**
   * Exactly once: starts the transactional producer first when it is not (fencing earlier relays of the
   * partition and reading the committed position), then one transaction from there. On the blocking
   * dispatcher.
   */
  private RoundDone transactionalRound(long id, long from, int entries, Duration readLimit) {
    long upTo = from - 1;
    boolean sending = false;
    try {
      if (stopRequested.get()) {
        return new RoundDone(id, upTo, 0, 0, null, false, null);   // told to stop: never fence the next owner
      }
      if (!transactions.started()) {
        sending = true;
        upTo = transactions.start(from - 1, journal, readLimit);
        sending = false;
      }
      RelayTransactions.Committed done = transactions.round(journal, upTo + 1, entries, readLimit);
      return new RoundDone(id, done.upTo(), 0, done.published(), null, true, null);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new RoundDone(id, upTo, 0, 0, e, sending, null);
    } catch (Exception e) {
      Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
      boolean kafka = sending || cause instanceof org.apache.kafka.common.KafkaException
          || cause instanceof RelayTransactions.Fenced;
      return new RoundDone(id, upTo, 0, 0, cause, kafka, null);
    }
  }

  private Effect<Long> onRoundDone(Long stored, RoundDone done) {
    if (done.round() != round) {
      return Effect().none();   // an earlier incarnation's round: its result says nothing of this one's position
    }
    roundRunning = false;
    if (done.failure() instanceof RelayTransactions.Fenced fenced && fencedInARow++ == 0 && !stopping) {
      // A later relay of this partition started: the partition moved (this node is a zombie, and stops
      // this relay as soon as it sees it lost the partition), or the broker aborted a transaction that
      // outlived transaction.timeout.ms. The later relay goes on from what this one committed; this
      // one starts again after a pause unless it is stopped meanwhile. Fenced again: a failure as any.
      closeTransactions();
      if (failures++ == 0) {
        failingSinceNanos = roundStartedNanos;
      }
      ctx.getLog().info("[{}] outbox relay fenced by a later relay of the partition ({}); it goes on from the "
          + "position this one committed, and this one starts again in {} s unless this node lost the partition "
          + "meanwhile", partition.shortName(), fenced.getMessage(), FENCED_PAUSE.toSeconds());
      timers.startSingleTimer(RETRY, Wake.INSTANCE, FENCED_PAUSE);
      return Effect().none();
    }
    if (done.failure() instanceof RelayTransactions.Fenced) {
      closeTransactions();
    } else if (done.failure() == null) {
      fencedInARow = 0;
    }
    if (stopping) {
      if (done.upTo() > publishedUpTo) {
        publishedUpTo = done.upTo();
        position.set(publishedUpTo);
      }
      return stopNow(stored);
    }
    if (done.failure() instanceof JournalGapException gap) {
      // Never skipped. The relay restarts (with backoff, at most every 30 s) and reads its stored
      // position again: a previous relay of the partition may have stored a newer one after this
      // one recovered (a hand-over). A real hole stays, and is reported at each attempt.
      ctx.getLog().error("[{}] outbox relay stopped publishing; it restarts from its stored position: {}",
          partition.shortName(), gap.getMessage());
      throw gap;
    }
    if (transactions != null && done.published() > 0 && done.failure() == null) {
      metrics.relayTransaction(partition);
    }
    lastRoundFull = done.upTo() - publishedUpTo >= settings.maxEntriesPerRound();
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
            partition.shortName(), publishedUpTo, failures, (ticker.nanoTime() - failingSinceNanos) / 1_000_000_000);
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
        && ticker.nanoTime() - storedAtNanos >= settings.storePositionEvery().toNanos()) {
      storedAtNanos = ticker.nanoTime();
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
    long now = ticker.nanoTime();
    wakeAgain = false;
    if (done.producer() != null && done.producer().generation() != producers.current().generation()) {
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
    boolean unsettled = done.producer() != null && done.sending() && cause instanceof TimeoutException;
    String what = unsettled
        ? "no acknowledgement within " + producers.ackTimeout().toSeconds() + " s (a wedged producer)"
        : (done.sending() ? "" : "reading the journal: ") + HealingProducer.describe(cause);
    if (transactions != null && done.sending() && transactions.started()) {
      what = "the round's transaction was aborted: " + what;
    }
    metrics.relayFailed(partition, cause);
    if (done.producer() != null && done.sending() && (unsettled || failures % REBUILD_EVERY == 0)) {
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
            + "max.message.bytes, ACLs; outbox.producer-kafka-clients) and the relay goes on by itself; "
            + "retrying in {} ms",
            partition.shortName(), topics, failingFor / 1_000_000_000, failures, what,
            delay.toMillis());
      }
    } else {
      ctx.getLog().warn("[{}] outbox relay round from journal {} failed, retrying in {} ms, one record at a time: {}",
          partition.shortName(), topics, delay.toMillis(), what);
    }
    timers.startSingleTimer(RETRY, Wake.INSTANCE, delay);
  }
}
