package io.fencepost.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

import io.fencepost.JournalIdentity;
import io.fencepost.PartitionActorSettings;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.kafka.internal.JournalPlugins;

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
 * Starts the partition actors' journal and snapshot plugins (those of every journal database) before
 * the consumer joins its group, by recovering the database's identity ({@link JournalIdentity})
 * through them: the first partition assigned to this node then does not pay for the plugins' start
 * (connection pool, first queries), and a journal that cannot start fails the pipeline's start,
 * loudly, instead of leaving assigned partitions paused. (A plugin whose start is cut short, e.g. by a
 * process paused for longer than {@code pekko.actor.creation-timeout}, stays dead for the life of the
 * actor system.)
 *
 * <p>The identity read through plugin {@code i} must say database {@code i} of
 * {@code journal-databases}: a plugin pointed at another database than the list that was verified, or
 * a count that another configuration layer changed, would send partitions to databases without their
 * histories. A lone database may record no identity (it was never one of several).
 */
final class JournalWarmup extends EventSourcedBehavior<Object, Object, Object> {

  private static final AtomicLong RUNS = new AtomicLong();

  private final String journalPluginId;
  private final String snapshotPluginId;
  private final CompletableFuture<Optional<JournalIdentity>> recovered;
  private final ActorRef<Object> self;
  private Optional<JournalIdentity> identity = Optional.empty();

  private JournalWarmup(String journalPluginId, String snapshotPluginId,
      CompletableFuture<Optional<JournalIdentity>> recovered, ActorRef<Object> self) {
    super(PersistenceId.ofUniqueId(JournalIdentity.PERSISTENCE_ID));
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
    List<String> journals = journalPlugins(system, settings);
    for (int i = 0; i < actor.journalDatabases(); i++) {
      checkPlugins(system.settings().config(), settings, i, journals.get(i));   // before any plugin starts
    }
    List<CompletableFuture<Optional<JournalIdentity>>> recoveries = new ArrayList<>();
    for (int i = 0; i < actor.journalDatabases(); i++) {
      CompletableFuture<Optional<JournalIdentity>> recovered = new CompletableFuture<>();
      String journal = actor.journalPluginId(i);
      String snapshots = actor.snapshotPluginId(i);
      Behavior<Object> warmup = Behaviors.setup(ctx -> new JournalWarmup(journal, snapshots, recovered,
          ctx.getSelf()));
      system.systemActorOf(warmup, "fencepost-warmup-" + RUNS.incrementAndGet(), Props.empty());
      recoveries.add(recovered);
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    for (int i = 0; i < recoveries.size(); i++) {
      String journal = journals.get(i);
      try {
        Optional<JournalIdentity> id = recoveries.get(i).get(Math.max(0, deadline - System.nanoTime()),
            TimeUnit.NANOSECONDS);
        checkIdentity(settings, i, journal, id, recoveries.get(0).getNow(Optional.empty()));
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

  /**
   * Refuses a plugin whose database says it is another place than the one the pipeline would use it
   * as, or another deployment's than database 0's.
   */
  private static void checkIdentity(PipelineSettings settings, int index, String journal, Optional<JournalIdentity> id,
      Optional<JournalIdentity> first) {
    int count = settings.partitionActor().journalDatabases();
    String why;
    if (id.isEmpty()) {
      if (count == 1) {
        return;
      }
      why = "records no identity in its journal";
    } else if (id.get().moving()) {
      why = id.get() + ": a move of the deployment's histories has not finished (run the same fencepost journal "
          + "move again)";
    } else if (id.get().index() != index || id.get().count() != count) {
      why = id.get().toString();
    } else if (first.isPresent() && !first.get().deployment().equals(id.get().deployment())) {
      why = id.get() + ", while database 0 is deployment [" + first.get().deployment() + "]'s";
    } else {
      return;
    }
    throw new JournalLayoutException("[" + settings.name() + "] refused to start: the journal [" + journal
        + "] the pipeline would use as database " + index + " of " + count + " (partition-actor.journal-databases) "
        + why + ". Partitions would recover from a database without their histories. Configure the journal with "
        + "JournalDatabases.pekkoConfig() over the deployment's databases in order, and let no other layer "
        + "(application.conf, -D, the pipeline's own partition-actor block) change journal-databases or the plugin "
        + "ids; nothing was consumed");
  }

  /**
   * Refuses a snapshot, read-journal or durable-state plugin of database {@code index} that reaches
   * another database than its journal plugin (whose identity was just read through it).
   */
  static void checkPlugins(com.typesafe.config.Config config, PipelineSettings settings, int index, String journal) {
    PartitionActorSettings actor = settings.partitionActor();
    List<String> others = new ArrayList<>(List.of(orDefault(actor.snapshotPluginId(index), config
        .getString("pekko.persistence.snapshot-store.plugin"))));
    List<String> what = new ArrayList<>(List.of("snapshot"));
    if (settings.outbox().enabled()) {
      OutboxSettings outbox = settings.outbox().placed(index);
      others.addAll(List.of(outbox.readJournalPluginId(), orDefault(outbox.durableStatePluginId(),
          config.getString("pekko.persistence.state.plugin"))));
      what.addAll(List.of("outbox read-journal", "outbox durable-state"));
    }
    List<String> verified = config.hasPath(PartitionActorSettings.VERIFIED_URLS)
        ? config.getStringList(PartitionActorSettings.VERIFIED_URLS) : List.of();
    JournalPlugins.refuseElsewhere(config, settings.name(), index, actor.journalDatabases(), journal, verified);
    JournalPlugins.refuseMixed(config, settings.name(), index, actor.journalDatabases(), journal, others, what);
  }

  private static String orDefault(String id, String byDefault) {
    return id.isEmpty() ? byDefault : id;
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
    return newEventHandlerBuilder().forAnyState().onAnyEvent((state, event) -> {
      identity = JournalIdentity.fromBytes(event);
      return state;
    });
  }

  @Override
  public SignalHandler<Object> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(RecoveryCompleted.instance(), state -> {
          recovered.complete(identity);
          self.tell(Done.getInstance());   // done: stop
        })
        .onSignal(RecoveryFailed.class, (state, failed) -> recovered.completeExceptionally(failed.getFailure()))
        .build();
  }
}
