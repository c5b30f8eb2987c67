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
    super(PersistenceId.ofUniqueId("fencepost-warmup|" + settings.name()));
    this.settings = settings;
    this.recovered = recovered;
    this.self = self;
  }

  /** Blocks until the plugins answered a recovery, at most {@code timeout}. */
  static void await(ActorSystem<?> system, PipelineSettings settings, Duration timeout) {
    CompletableFuture<Done> recovered = new CompletableFuture<>();
    Behavior<Object> warmup = Behaviors.setup(ctx -> new JournalWarmup(settings, recovered, ctx.getSelf()));
    system.systemActorOf(warmup, "fencepost-warmup-" + RUNS.incrementAndGet(), Props.empty());
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

  /** The journal plugin's id the partition actors use. */
  static String journalPlugin(ActorSystem<?> system, PipelineSettings settings) {
    return settings.partitionActor().journalPluginId().isEmpty()
        ? system.settings().config().getString("pekko.persistence.journal.plugin")
        : settings.partitionActor().journalPluginId();
  }

  /** The snapshot plugin's id the partition actors use (empty: none configured). */
  static String snapshotPlugin(ActorSystem<?> system, PipelineSettings settings) {
    return settings.partitionActor().snapshotPluginId().isEmpty()
        ? system.settings().config().getString("pekko.persistence.snapshot-store.plugin")
        : settings.partitionActor().snapshotPluginId();
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
