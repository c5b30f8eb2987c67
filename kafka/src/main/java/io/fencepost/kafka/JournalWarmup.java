package io.fencepost.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

import io.fencepost.PartitionActorSettings;

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
 * Starts the partition actors' journal and snapshot plugins (those of every journal database) before the consumer joins its group, by
 * recovering an empty persistence id through them: the first partition assigned to this node then
 * does not pay for the plugins' start (connection pool, first queries), and a journal that cannot
 * start fails the pipeline's start, loudly, instead of leaving assigned partitions paused. (A plugin
 * whose start is cut short, e.g. by a process paused for longer than
 * {@code pekko.actor.creation-timeout}, stays dead for the life of the actor system.)
 */
final class JournalWarmup extends EventSourcedBehavior<Object, Object, Object> {

  private static final AtomicLong RUNS = new AtomicLong();

  private final String journalPluginId;
  private final String snapshotPluginId;
  private final CompletableFuture<Done> recovered;
  private final ActorRef<Object> self;

  private JournalWarmup(String pipeline, String journalPluginId, String snapshotPluginId,
      CompletableFuture<Done> recovered, ActorRef<Object> self) {
    super(PersistenceId.ofUniqueId("fencepost-warmup|" + pipeline));
    this.journalPluginId = journalPluginId;
    this.snapshotPluginId = snapshotPluginId;
    this.recovered = recovered;
    this.self = self;
  }

  /**
   * Blocks until the plugins of every journal database answered a recovery, at most {@code timeout}
   * (the databases are asked at once).
   */
  static void await(ActorSystem<?> system, PipelineSettings settings, Duration timeout) {
    PartitionActorSettings actor = settings.partitionActor();
    List<CompletableFuture<Done>> recoveries = new ArrayList<>();
    for (int i = 0; i < actor.journalDatabases(); i++) {
      CompletableFuture<Done> recovered = new CompletableFuture<>();
      String journal = actor.journalPluginId(i);
      String snapshots = actor.snapshotPluginId(i);
      Behavior<Object> warmup = Behaviors.setup(ctx -> new JournalWarmup(settings.name(), journal, snapshots,
          recovered, ctx.getSelf()));
      system.systemActorOf(warmup, "fencepost-warmup-" + RUNS.incrementAndGet(), Props.empty());
      recoveries.add(recovered);
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    List<String> journals = journalPlugins(system, settings);
    for (int i = 0; i < recoveries.size(); i++) {
      String journal = journals.get(i);
      try {
        recoveries.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
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
  }

  /** The journal plugins' ids the partition actors use, one per journal database. */
  static List<String> journalPlugins(ActorSystem<?> system, PipelineSettings settings) {
    return plugins(settings, settings.partitionActor()::journalPluginId,
        system.settings().config().getString("pekko.persistence.journal.plugin"));
  }

  /** The snapshot plugins' ids the partition actors use, one per journal database (empty: none configured). */
  static List<String> snapshotPlugins(ActorSystem<?> system, PipelineSettings settings) {
    return plugins(settings, settings.partitionActor()::snapshotPluginId,
        system.settings().config().getString("pekko.persistence.snapshot-store.plugin"));
  }

  private static List<String> plugins(PipelineSettings settings, IntFunction<String> ofDatabase, String byDefault) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < settings.partitionActor().journalDatabases(); i++) {
      String id = ofDatabase.apply(i);
      ids.add(id.isEmpty() ? byDefault : id);
    }
    return ids;
  }

  @Override
  public Object emptyState() {
    return Done.getInstance();
  }

  @Override
  public String journalPluginId() {
    return journalPluginId;
  }

  @Override
  public String snapshotPluginId() {
    return snapshotPluginId;
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
