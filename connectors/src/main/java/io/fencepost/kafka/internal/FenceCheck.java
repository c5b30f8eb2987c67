package io.fencepost.kafka.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.internal.UniqueKeyViolation;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.typed.JournalPersistFailed;
import org.apache.pekko.persistence.typed.JournalPersistRejected;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryCompleted;
import org.apache.pekko.persistence.typed.RecoveryFailed;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * Checks, before the consumer joins its group, that the journal keeps the precondition fencing rests
 * on: it refuses a second write of a sequence number a persistence id already holds (the unique key
 * {@code (persistence_id, sequence_number)}). Two writers recover the same probe history, the first
 * writes the next sequence number, then the second writes the same one: the journal must refuse it.
 * A schema installed without that key accepts both, and a stale owner's write would then commit
 * beside the rightful owner's: the pipeline refuses to start instead.
 *
 * <p>The probe history {@code fencepost-fence-check|<pipeline>} gains one row of no bytes per start.
 * Nodes starting at once may refuse each other's probe writes; only two accepted writes of one
 * sequence number prove the key missing.
 */
public final class FenceCheck extends EventSourcedBehavior<FenceCheck.Command, byte[], Long> {

  /** A stop may reach a probe that already stopped (after its refused write): not a dead letter to log. */
  enum Command implements DeadLetterSuppression {
    /** Write one probe event. */
    WRITE,
    STOP
  }

  private static final AtomicLong RUNS = new AtomicLong();
  private static final byte[] PROBE = new byte[0];

  private final ActorContext<Command> ctx;
  private final String journalPluginId;
  private final CompletableFuture<Long> recovered;
  private final CompletableFuture<Long> written;

  private FenceCheck(ActorContext<Command> ctx, String persistenceId, String journalPluginId,
      CompletableFuture<Long> recovered, CompletableFuture<Long> written) {
    // The refused write is what the check expects: the supervisor logs nothing for it (the journal
    // failure restarts the probe, which then stops).
    super(PersistenceId.ofUniqueId(persistenceId), SupervisorStrategy.restartWithBackoff(Duration.ofMillis(10),
        Duration.ofMillis(10), 0).withLoggingEnabled(false));
    this.ctx = ctx;
    this.journalPluginId = journalPluginId;
    this.recovered = recovered;
    this.written = written;
  }

  /**
   * Runs the check; returns normally when the journal refused the duplicate write, throws an
   * {@link IllegalStateException} naming the table and the fix when it accepted it.
   */
  public static void verify(ActorSystem<?> system, String pipeline, String plugin, Duration timeout) {
    String pid = "fencepost-fence-check|" + pipeline;
    String journal = plugin.isEmpty() ? system.settings().config().getString("pekko.persistence.journal.plugin") : plugin;
    Probe first = new Probe(system, pid, plugin);
    Probe second = new Probe(system, pid, plugin);
    try {
      long before = await(first.recovered, pipeline, journal, timeout, "recover the fence check's history");
      if (await(second.recovered, pipeline, journal, timeout, "recover the fence check's history") != before) {
        return;   // another node's probe wrote in between: that node checks the key
      }
      Long sequenceNr = first.write(pid, pipeline, journal, timeout);
      if (sequenceNr == null) {
        return;   // refused on the key: another node's probe took this sequence number first
      }
      if (second.write(pid, pipeline, journal, timeout) != null) {
        throw new IllegalStateException("[" + pipeline + "] the journal [" + journal + "] accepted two writes "
            + "of sequence number " + sequenceNr + " for persistence id [" + pid + "]: its table has no unique key on "
            + "(persistence_id, sequence_number), so a stale owner's write would commit beside the rightful owner's "
            + "(no fencing). Add it (pekko-persistence-jdbc: ALTER TABLE event_journal ADD PRIMARY KEY "
            + "(persistence_id, sequence_number), after removing rows that break it) and start again; nothing was "
            + "consumed");
      }
    } finally {
      first.stop();
      second.stop();
    }
  }

  /** One writer of the probe history. */
  private static final class Probe {
    final CompletableFuture<Long> recovered = new CompletableFuture<>();
    final CompletableFuture<Long> written = new CompletableFuture<>();
    final ActorRef<Command> ref;

    Probe(ActorSystem<?> system, String pid, String plugin) {
      ref = system.systemActorOf(Behaviors.setup(ctx -> new FenceCheck(ctx, pid, plugin, recovered, written)),
          "fencepost-fence-check-" + RUNS.incrementAndGet(), Props.empty());
    }

    void stop() {
      ref.tell(Command.STOP);
    }

    /**
     * The written sequence number, or null when the journal refused the write on the unique key; any
     * other failure fails the check (the fence could not be checked).
     */
    Long write(String pid, String pipeline, String journal, Duration timeout) {
      ref.tell(Command.WRITE);
      try {
        return written.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        if (UniqueKeyViolation.in(e.getCause(), pid)) {
          return null;
        }
        throw new IllegalStateException("[" + pipeline + "] the journal [" + journal + "] failed the fence "
            + "check's write (" + e.getCause() + (e.getCause().getCause() == null ? "" : ": " + e.getCause().getCause())
            + "): the unique key (persistence_id, sequence_number) could not be checked; nothing was consumed",
            e.getCause());
      } catch (TimeoutException e) {
        throw new IllegalStateException("[" + pipeline + "] the journal [" + journal + "] did not answer the "
            + "fence check's write within " + timeout + " (ask-timeout); nothing was consumed", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while checking the journal's unique key", e);
      }
    }
  }

  private static long await(CompletableFuture<Long> recovered, String pipeline, String journal,
      Duration timeout, String what) {
    try {
      return recovered.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException | ExecutionException e) {
      throw new IllegalStateException("[" + pipeline + "] the journal [" + journal + "] did not " + what
          + " within " + timeout + " (ask-timeout): " + e + "; nothing was consumed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while checking the journal's unique key", e);
    }
  }

  @Override
  public Long emptyState() {
    return 0L;
  }

  @Override
  public String journalPluginId() {
    return journalPluginId;
  }

  @Override
  public CommandHandler<Command, byte[], Long> commandHandler() {
    return newCommandHandlerBuilder().forAnyState().onAnyCommand(command -> command == Command.STOP
        ? Effect().stop()
        : Effect().persist(PROBE).thenRun(state -> written.complete(lastSequenceNumber(ctx))).thenStop());
  }

  @Override
  public EventHandler<Long, byte[]> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent((state, event) -> state);
  }

  @Override
  public SignalHandler<Long> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(RecoveryCompleted.instance(), state -> {
          if (written.isDone()) {
            ctx.getSelf().tell(Command.STOP);   // restarted after the refused write
          } else {
            recovered.complete(lastSequenceNumber(ctx));
          }
        })
        .onSignal(RecoveryFailed.class, (state, failed) -> recovered.completeExceptionally(failed.getFailure()))
        .onSignal(JournalPersistFailed.class, (state, failed) -> written.completeExceptionally(failed.getFailure()))
        .onSignal(JournalPersistRejected.class, (state, rejected) -> written.completeExceptionally(rejected.getFailure()))
        .build();
  }
}
