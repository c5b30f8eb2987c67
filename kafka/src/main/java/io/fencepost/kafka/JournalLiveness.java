package io.fencepost.kafka;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the journal and snapshot plugins of this JVM still answer: each {@link #probe()} recovers
 * an empty persistence id through them ({@link JournalWarmup}). A plugin that answers with a failure
 * (its database is away, its circuit breaker open) is alive: it heals with the database, and a
 * restart would not help. A plugin that does not answer at all (Pekko's {@code RecoveryTimedOut}, or
 * no outcome within the probe's own bound) died in this JVM (a plugin whose start failed, or was cut
 * short, stays dead for the life of the actor system): every recovery and write of the node fails
 * until the process restarts. Once it has been silent for {@code dead-after}, the pipeline is not
 * live.
 */
final class JournalLiveness {

  private static final Logger log = LoggerFactory.getLogger(JournalLiveness.class);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final String plugin;
  /** A probe's own bound: well past the plugins' recovery timeout (30 s by default). */
  private final Duration bound;
  private final AtomicBoolean probing = new AtomicBoolean();
  /** When the first silent probe of the current silence ended (0: the plugins answer). */
  private volatile long silentSinceNanos;
  private volatile String lastSilence = "";
  private volatile boolean errorLogged;

  JournalLiveness(ActorSystem<?> system, PipelineSettings settings) {
    this.system = system;
    this.settings = settings;
    this.plugin = JournalWarmup.journalPlugin(system, settings);
    this.bound = settings.askTimeout().multipliedBy(2).plus(Duration.ofSeconds(30));
  }

  /** Starts a probe unless one is under way; its outcome updates the state. */
  void probe() {
    if (!probing.compareAndSet(false, true)) {
      return;
    }
    CompletableFuture<Done> recovered;
    try {
      recovered = JournalWarmup.recover(system, settings);
    } catch (RuntimeException e) {   // the actor system is terminating
      probing.set(false);
      return;
    }
    recovered.orTimeout(bound.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
        .whenComplete((done, failure) -> {
          try {
            outcome(failure);
          } finally {
            probing.set(false);
          }
        });
  }

  /** Records a probe's outcome; null: the plugins recovered the probe. Visible for tests. */
  void outcome(Throwable failure) {
    if (failure == null || !silent(failure)) {
      if (silentSinceNanos != 0) {
        log.info("[{}] the journal [{}] answers again", settings.name(), plugin);
      }
      silentSinceNanos = 0;
      errorLogged = false;
      return;
    }
    lastSilence = String.valueOf(failure instanceof TimeoutException ? "no outcome within " + bound : failure);
    if (silentSinceNanos == 0) {
      silentSinceNanos = System.nanoTime();
      log.warn("[{}] the journal [{}] did not answer a recovery ({}); the node is not live if it stays silent for "
          + "dead-after ({})", settings.name(), plugin, lastSilence, settings.deadAfter());
    } else if (!errorLogged && !deadReason(settings.deadAfter()).isEmpty()) {
      errorLogged = true;
      log.error("[{}] {}", settings.name(), deadReason(settings.deadAfter()));
    }
  }

  /** A failure that is no answer from a plugin (rather than a plugin reporting its database's failure). */
  private static boolean silent(Throwable failure) {
    Set<Throwable> seen = new HashSet<>();
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof TimeoutException || t.getClass().getName().equals("org.apache.pekko.persistence.RecoveryTimedOut")) {
        return true;
      }
    }
    return false;
  }

  /** Why the journal makes the node not ready (silent at the last probes), or empty. */
  String silentReason() {
    long since = silentSinceNanos;
    return since == 0 ? "" : "the journal [" + plugin + "] has not answered a recovery for "
        + (System.nanoTime() - since) / 1_000_000_000 + " s (" + lastSilence + ")";
  }

  /** Why the node is not live (the plugins silent for longer than {@code deadAfter}), or empty. */
  String deadReason(Duration deadAfter) {
    long since = silentSinceNanos;
    if (since == 0 || System.nanoTime() - since <= deadAfter.toNanos()) {
      return "";
    }
    return silentReason() + ", past dead-after (" + deadAfter.toSeconds() + " s): its plugin is not running in this "
        + "JVM and only a restart brings it back";
  }
}
