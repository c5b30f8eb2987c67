package io.fencepost.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.pekko.actor.ActorIdentity;
import org.apache.pekko.actor.Identify;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.pattern.Patterns;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the journal and snapshot plugin actors of this JVM still run. Pekko starts a plugin once,
 * as the system actor {@code /system/<plugin id>}, and hands out that reference for the life of the
 * actor system: a plugin that stopped (its restart after a failure threw, or its start was cut short)
 * is never started again, and every recovery and write of the node fails until the process restarts.
 * Each {@link #probe()} asks both actors to identify themselves. A plugin whose database is away still
 * runs (it answers its callers with failures, and heals with the database): that is not this check's
 * business. Missing for {@code dead-after}, the pipeline is not live.
 */
final class JournalLiveness {

  private static final Logger log = LoggerFactory.getLogger(JournalLiveness.class);
  private static final Duration IDENTIFY_TIMEOUT = Duration.ofSeconds(10);

  private final ActorSystem<?> system;
  private final String pipeline;
  private final List<String> plugins = new ArrayList<>();
  private final AtomicBoolean probing = new AtomicBoolean();
  /** The plugins found missing at the last probe, and since when (read together). */
  private volatile Missing missing;
  private final Ticker ticker;

  private record Missing(List<String> plugins, long sinceNanos) {
  }

  JournalLiveness(ActorSystem<?> system, PipelineSettings settings, Ticker ticker) {
    this.system = system;
    this.ticker = ticker;
    this.pipeline = settings.name();
    plugins.addAll(JournalWarmup.journalPlugins(system, settings));
    JournalWarmup.snapshotPlugins(system, settings).stream().filter(id -> !id.isEmpty()).forEach(plugins::add);
  }

  /** Asks the plugin actors to identify themselves, unless a probe is under way; the answers update the state. */
  void probe() {
    if (!probing.compareAndSet(false, true)) {
      return;
    }
    List<CompletableFuture<String>> absent = new ArrayList<>();
    for (String plugin : plugins) {
      absent.add(Patterns.ask(system.classicSystem().actorSelection("/system/" + plugin), new Identify(plugin),
              IDENTIFY_TIMEOUT).toCompletableFuture()
          .thenApply(answer -> answer instanceof ActorIdentity id && id.getActorRef().isEmpty() ? plugin : "")
          .exceptionally(e -> null));   // no answer at all (an overloaded system): nothing learnt
    }
    CompletableFuture.allOf(absent.toArray(new CompletableFuture[0])).whenComplete((v, e) -> {
      try {
        List<String> gone = new ArrayList<>();
        boolean known = true;
        for (CompletableFuture<String> a : absent) {
          String plugin = a.join();
          known &= plugin != null;
          if (plugin != null && !plugin.isEmpty()) {
            gone.add(plugin);
          }
        }
        if (known || !gone.isEmpty()) {
          outcome(gone);
        }
      } finally {
        probing.set(false);
      }
    });
  }

  /** Records which plugins a probe found missing (none: all run). Visible for tests. */
  void outcome(List<String> gone) {
    Missing before = missing;
    if (gone.isEmpty()) {
      if (before != null) {
        log.info("[{}] the persistence plugins {} run again", pipeline, before.plugins());
      }
      missing = null;
    } else if (before == null || !before.plugins().equals(gone)) {
      missing = new Missing(List.copyOf(gone), ticker.nanoTime());
      log.error("[{}] the persistence plugin(s) {} no longer run in this JVM: every recovery and write of its "
          + "partitions fails until the process restarts (Pekko never starts a stopped plugin again). The node is "
          + "not ready, and not live after dead-after", pipeline, gone);
    }
  }

  /** Why the plugins make the node not ready, or empty. */
  String missingReason() {
    Missing m = missing;
    return m == null ? "" : reason(m);
  }

  /** Why the node is not live (a plugin missing for longer than {@code deadAfter}), or empty. */
  String deadReason(Duration deadAfter) {
    Missing m = missing;
    if (m == null || ticker.nanoTime() - m.sinceNanos() <= deadAfter.toNanos()) {
      return "";
    }
    return reason(m) + ", past dead-after (" + deadAfter.toSeconds() + " s): only a restart brings it back";
  }

  private String reason(Missing m) {
    return "the persistence plugin(s) " + m.plugins() + " no longer run in this JVM (for "
        + (ticker.nanoTime() - m.sinceNanos()) / 1_000_000_000 + " s)";
  }
}
