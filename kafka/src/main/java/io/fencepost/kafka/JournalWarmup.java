package io.fencepost.kafka;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryCompleted;
import org.apache.pekko.persistence.typed.RecoveryFailed;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * Starts the partition actors' journal and snapshot plugins before the consumer joins its group, by
 * recovering an empty persistence id through them: the first partition assigned to this node then
 * does not pay for the plugins' start (connection pool, first queries), and a journal that cannot
 * start fails the pipeline's start, loudly, instead of leaving assigned partitions paused. (A plugin
 * whose start is cut short, e.g. by a process paused for longer than
 * {@code pekko.actor.creation-timeout}, stays dead for the life of the actor system.)
 */
final class JournalWarmup extends EventSourcedBehavior<Object, Object, Object> {

  private static final AtomicLong RUNS = new AtomicLong();

  private final PipelineSettings settings;
  private final CompletableFuture<Done> recovered;
  private final ActorRef<Object> self;

  private JournalWarmup(PipelineSettings settings, CompletableFuture<Done> recovered, ActorRef<Object> self) {
    // The failure is the caller's to report: the supervisor logs nothing for it.
    super(PersistenceId.ofUniqueId("fencepost-warmup|" + settings.name()), SupervisorStrategy.restartWithBackoff(
        Duration.ofMillis(10), Duration.ofMillis(10), 0).withLoggingEnabled(false));
    this.settings = settings;
    this.recovered = recovered;
    this.self = self;
  }

  /**
   * Recovers the empty persistence id once: completes when the plugins answered, exceptionally with
   * the recovery's failure ({@code RecoveryTimedOut} when a plugin did not answer at all).
   */
  static CompletableFuture<Done> recover(ActorSystem<?> system, PipelineSettings settings) {
    CompletableFuture<Done> recovered = new CompletableFuture<>();
    // A failed recovery restarts the probe, which then stops: one recovery each.
    Behavior<Object> warmup = Behaviors.setup(ctx -> recovered.isDone() ? Behaviors.stopped()
        : new JournalWarmup(settings, recovered, ctx.getSelf()));
    system.systemActorOf(warmup, "fencepost-warmup-" + RUNS.incrementAndGet(), Props.empty());
    return recovered;
  }

  /** The journal plugin's id the partition actors use. */
  static String journalPlugin(ActorSystem<?> system, PipelineSettings settings) {
    return settings.partitionActor().journalPluginId().isEmpty()
        ? system.settings().config().getString("pekko.persistence.journal.plugin")
        : settings.partitionActor().journalPluginId();
  }

  /** Blocks until the plugins answered a recovery, at most {@code timeout}. */
  static void await(ActorSystem<?> system, PipelineSettings settings, Duration timeout) {
    CompletableFuture<Done> recovered = recover(system, settings);
    String journal = journalPlugin(system, settings);
    try {
      recovered.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new IllegalStateException("[" + settings.name() + "] the journal [" + journal + "] did not answer a "
          + "recovery within " + timeout + " (ask-timeout): check that its database is reachable and its schema "
          + "installed; nothing was consumed");
    } catch (ExecutionException e) {
      throw new IllegalStateException("[" + settings.name() + "] the journal [" + journal + "] failed a recovery: "
          + e.getCause() + "; check that its database is reachable and its schema installed; nothing was consumed",
          e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the journal started", e);
    }
  }

  @Override
  public Object emptyState() {
    return Done.getInstance();
  }

  @Override
  public String journalPluginId() {
    return settings.partitionActor().journalPluginId();
  }

  @Override
  public String snapshotPluginId() {
    return settings.partitionActor().snapshotPluginId();
  }

  @Override
  public CommandHandler<Object, Object, Object> commandHandler() {
    return newCommandHandlerBuilder().forAnyState().onAnyCommand(c -> Effect().stop());
  }

  @Override
  public EventHandler<Object, Object> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent((state, event) -> state);
  }

  @Override
  public SignalHandler<Object> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(RecoveryCompleted.instance(), state -> {
          recovered.complete(Done.getInstance());
          self.tell(Done.getInstance());   // done: stop
        })
        .onSignal(RecoveryFailed.class, (state, failed) -> recovered.completeExceptionally(failed.getFailure()))
        .build();
  }
}
