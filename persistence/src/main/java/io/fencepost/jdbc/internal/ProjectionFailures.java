package io.fencepost.jdbc.internal;

import java.time.Duration;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.annotation.InternalApi;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * INTERNAL API: what a JDBC projection fails on (a journal, its database, or the listing of its
 * journals), each retried after a backoff (0.5 s doubling to 30 s) instead of every run; WARN at the
 * first failure, ERROR once it has failed for {@code errorAfter} (then once a minute while it lasts),
 * INFO when it passes again. Meters, tagged {@code projection}: {@code fencepost.projection.failures}
 * (failed attempts), {@code fencepost.projection.failing} (what every started instance of the
 * projection in the registry has failed on for {@code errorAfter} or longer) and
 * {@code fencepost.projection.lag} (journal entries its instances have yet to apply, over every
 * database they project from).
 */
@InternalApi
public final class ProjectionFailures implements AutoCloseable {

  /** The key of a failure to reach the projection's database (not any one journal's). */
  public static final String DATABASE = "its database";
  /** The key of a failure to list the journals to read ({@code forTopics}). */
  public static final String DISCOVERY = "the listing of its journals";

  private static final Logger log = LoggerFactory.getLogger("io.fencepost.jdbc.JdbcProjection");
  private static final long FIRST_BACKOFF_NANOS = Duration.ofMillis(500).toNanos();
  private static final long MAX_BACKOFF_NANOS = Duration.ofSeconds(30).toNanos();
  private static final long ERROR_EVERY_NANOS = Duration.ofMinutes(1).toNanos();
  /** Started instances per registry and projection name: one gauge sums them (Micrometer keeps the first). */
  private static final Map<MeterRegistry, Map<String, Set<ProjectionFailures>>> STARTED = new ConcurrentHashMap<>();

  /** One failing streak. */
  private static final class Streak {
    final long sinceNanos;
    volatile int attempts;
    volatile long nextAttemptNanos;
    volatile long errorLoggedNanos;
    volatile String error;

    Streak(long sinceNanos) {
      this.sinceNanos = sinceNanos;
    }
  }

  private final String projection;
  private volatile long errorAfterNanos;
  private final Map<String, Streak> failing = new ConcurrentHashMap<>();
  /** The database it projects from (instances of one name on several databases add their lags up). */
  private final String database;
  /** Journal entries not yet applied, as last measured; -1 before the first measure. */
  private final AtomicLong lag = new AtomicLong(-1);
  private volatile Counter failures;
  private volatile MeterRegistry registry;

  public ProjectionFailures(String projection, String database, Duration errorAfter) {
    this.projection = projection;
    this.database = database;
    this.errorAfterNanos = errorAfter.toNanos();
  }

  /** How long a failure may last before it is reported at ERROR and counted as failing. */
  public void errorAfter(Duration errorAfter) {
    this.errorAfterNanos = errorAfter.toNanos();
  }

  /** The projection started: its meters, in {@code meters}. */
  public void registerMeters(MeterRegistry meters) {
    this.registry = meters;
    this.failures = Counter.builder("fencepost.projection.failures")
        .description("failed attempts of a JDBC projection to apply a journal's next batches (each retried)")
        .tag("projection", projection).register(meters);
    Set<ProjectionFailures> instances = STARTED.computeIfAbsent(meters, m -> new ConcurrentHashMap<>())
        .computeIfAbsent(projection, p -> ConcurrentHashMap.newKeySet());
    instances.add(this);
    Gauge.builder("fencepost.projection.failing", instances, ProjectionFailures::longFailing)
        .description("what a JDBC projection has failed on for its error-after or longer (journals, its database)")
        .tag("projection", projection).strongReference(true).register(meters);
    Gauge.builder("fencepost.projection.lag", instances, ProjectionFailures::totalLag)
        .description("journal entries a JDBC projection has yet to apply (over its journals; measured each second)")
        .tag("projection", projection).strongReference(true).register(meters);
  }

  /** The projection measured {@code entries} journal entries it has yet to apply. */
  public void lag(long entries) {
    lag.set(entries);
  }

  /**
   * The lag over the journals of every database the started instances project from: per database
   * the largest an instance measured (instances of one database read the same journals), summed;
   * -1 before any measured.
   */
  private static double totalLag(Set<ProjectionFailures> instances) {
    Map<String, Long> byDatabase = new HashMap<>();
    for (ProjectionFailures f : instances) {
      byDatabase.merge(f.database, f.lag.get(), Math::max);
    }
    return byDatabase.values().stream().anyMatch(l -> l >= 0)
        ? byDatabase.values().stream().mapToLong(l -> Math.max(0, l)).sum() : -1;
  }

  /** The projection closed: it counts no longer, and its failures are forgotten. */
  @Override
  public void close() {
    MeterRegistry meters = registry;
    if (meters != null) {
      STARTED.getOrDefault(meters, Map.of()).getOrDefault(projection, Set.of()).remove(this);
    }
    failing.clear();
  }

  /** Whether {@code key} failed and waits out its backoff. */
  public boolean waiting(String key) {
    Streak s = failing.get(key);
    return s != null && System.nanoTime() < s.nextAttemptNanos;
  }

  /** {@code key} passed (a journal's batches applied, or none were due): its streak, if any, ends. */
  public void passed(String key) {
    Streak s = failing.remove(key);
    if (s != null) {
      log.info("[{}] projection applies [{}] again, after {} failed attempt(s) in {} s", projection, key, s.attempts,
          Duration.ofNanos(System.nanoTime() - s.sinceNanos).toSeconds());
    }
  }

  /** {@code key}'s streak ends without a word (a journal stopped for good here, said at ERROR already). */
  public void forget(String key) {
    failing.remove(key);
  }

  /** Forgets journals no longer read (a history moved to another database). */
  public void retainOnly(Collection<String> journals) {
    failing.keySet().removeIf(k -> !k.equals(DATABASE) && !k.equals(DISCOVERY) && !journals.contains(k));
  }

  /** {@code key}'s attempt failed; {@code logged}: the failure was already reported (a journal gap). */
  public void failed(String key, Throwable error, boolean logged) {
    long now = System.nanoTime();
    Streak s = failing.computeIfAbsent(key, p -> new Streak(now));
    s.attempts++;
    s.error = error.getMessage() == null ? error.toString() : error.getMessage();
    long backoff = Math.min(MAX_BACKOFF_NANOS, FIRST_BACKOFF_NANOS << Math.min(s.attempts - 1, 10));
    s.nextAttemptNanos = now + backoff;
    Counter counter = failures;
    if (counter != null) {
      counter.increment();
    }
    if (logged) {
      return;
    }
    if (now - s.sinceNanos >= errorAfterNanos) {
      if (s.errorLoggedNanos == 0 || now - s.errorLoggedNanos >= ERROR_EVERY_NANOS) {
        s.errorLoggedNanos = now;
        log.error("[{}] projection has failed on [{}] for {} s ({} attempts; next in {} s): {}. {}", projection, key,
            Duration.ofNanos(now - s.sinceNanos).toSeconds(), s.attempts, Duration.ofNanos(backoff).toSeconds(),
            s.error, advice(key));
      }
    } else if (s.attempts == 1) {
      log.warn("[{}] projection failed on [{}], retrying with a backoff: {}", projection, key, s.error);
    }
  }

  private static String advice(String key) {
    if (key.equals(DATABASE) || key.equals(DISCOVERY)) {
      return "Its read model lags; it goes on by itself once the database answers again";
    }
    return "Its read model lags and journal compaction of that partition waits for it. Fix the handler or the data: "
        + "it goes on by itself; to skip the batch instead, see docs/read-models.md, \"A batch that never applies\"";
  }

  /** Why the projection is not ready: something it has failed on for {@code errorAfter} or longer. */
  public Optional<String> notReady() {
    long now = System.nanoTime();
    long count = failingLong(now);
    return failing.entrySet().stream()
        .filter(e -> now - e.getValue().sinceNanos >= errorAfterNanos)
        .max(Comparator.comparingLong(e -> now - e.getValue().sinceNanos))
        .map(e -> "projection [" + projection + "] has failed on [" + e.getKey() + "] for "
            + Duration.ofNanos(now - e.getValue().sinceNanos).toSeconds() + " s (" + e.getValue().attempts
            + " attempts): " + e.getValue().error + (count > 1 ? " (and " + (count - 1) + " more)" : ""));
  }

  private long failingLong(long now) {
    return failing.values().stream().filter(s -> now - s.sinceNanos >= errorAfterNanos).count();
  }

  private static double longFailing(Set<ProjectionFailures> instances) {
    long now = System.nanoTime();
    return instances.stream().mapToLong(f -> f.failingLong(now)).sum();
  }
}
