package io.fencepost.jdbc.internal;

import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import io.fencepost.annotation.InternalApi;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * INTERNAL API: the journals a JDBC projection fails on, each retried after a backoff (0.5 s doubling
 * to 30 s) instead of every run; WARN at the first failure, ERROR once a journal has failed for
 * {@code errorAfter} (then once a minute while it lasts), INFO when it passes again. Meters:
 * {@code fencepost.projection.failures} (a counter of failed attempts) and
 * {@code fencepost.projection.failing} (journals failing for {@code errorAfter} or longer), both tagged
 * {@code projection}.
 */
@InternalApi
public final class ProjectionFailures {

  private static final Logger log = LoggerFactory.getLogger("io.fencepost.jdbc.JdbcProjection");
  private static final long FIRST_BACKOFF_NANOS = Duration.ofMillis(500).toNanos();
  private static final long MAX_BACKOFF_NANOS = Duration.ofSeconds(30).toNanos();
  private static final long ERROR_EVERY_NANOS = Duration.ofMinutes(1).toNanos();

  /** One journal's failing streak. */
  private static final class Streak {
    final long sinceNanos;
    int attempts;
    long nextAttemptNanos;
    long errorLoggedNanos;
    String error;

    Streak(long sinceNanos) {
      this.sinceNanos = sinceNanos;
    }
  }

  private final String projection;
  private volatile long errorAfterNanos;
  private final Map<String, Streak> failing = new ConcurrentHashMap<>();
  private final Counter failures;

  public ProjectionFailures(String projection, Duration errorAfter, MeterRegistry meters) {
    this.projection = projection;
    this.errorAfterNanos = errorAfter.toNanos();
    this.failures = Counter.builder("fencepost.projection.failures")
        .description("failed attempts of a JDBC projection to apply a journal's next batches (each retried)")
        .tag("projection", projection).register(meters);
    Gauge.builder("fencepost.projection.failing", this, f -> f.longFailing(System.nanoTime()))
        .description("journals a JDBC projection has failed on for its error-after or longer")
        .tag("projection", projection).register(meters);
  }

  /** How long a journal may fail before it is reported at ERROR and counted as failing. */
  public void errorAfter(Duration errorAfter) {
    this.errorAfterNanos = errorAfter.toNanos();
  }

  /** Whether {@code pid} failed and waits out its backoff. */
  public boolean waiting(String pid) {
    Streak s = failing.get(pid);
    return s != null && System.nanoTime() < s.nextAttemptNanos;
  }

  /** {@code pid}'s batches applied (or none were due): its streak, if any, ends. */
  public void passed(String pid) {
    Streak s = failing.remove(pid);
    if (s != null) {
      log.info("[{}] projection applies [{}] again, after {} failed attempt(s) in {} s", projection, pid, s.attempts,
          Duration.ofNanos(System.nanoTime() - s.sinceNanos).toSeconds());
    }
  }

  /** {@code pid}'s attempt failed; {@code logged}: the failure was already reported (a journal gap). */
  public void failed(String pid, Throwable error, boolean logged) {
    long now = System.nanoTime();
    Streak s = failing.computeIfAbsent(pid, p -> new Streak(now));
    s.attempts++;
    s.error = error.getMessage() == null ? error.toString() : error.getMessage();
    long backoff = Math.min(MAX_BACKOFF_NANOS, FIRST_BACKOFF_NANOS << Math.min(s.attempts - 1, 10));
    s.nextAttemptNanos = now + backoff;
    failures.increment();
    if (logged) {
      return;
    }
    if (now - s.sinceNanos >= errorAfterNanos) {
      if (s.errorLoggedNanos == 0 || now - s.errorLoggedNanos >= ERROR_EVERY_NANOS) {
        s.errorLoggedNanos = now;
        log.error("[{}] projection has failed on [{}] for {} s ({} attempts; next in {} s): {}. Its read model lags "
            + "and journal compaction of that partition waits for it. Fix the handler or the data: it goes on by "
            + "itself; to skip the batch instead, see docs/read-models.md, \"A batch that never applies\"", projection,
            pid, Duration.ofNanos(now - s.sinceNanos).toSeconds(), s.attempts, Duration.ofNanos(backoff).toSeconds(),
            s.error);
      }
    } else if (s.attempts == 1) {
      log.warn("[{}] projection failed on [{}], retrying with a backoff: {}", projection, pid, s.error);
    }
  }

  /** Why the projection is not ready: a journal it has failed on for {@code errorAfter} or longer. */
  public Optional<String> notReady() {
    long now = System.nanoTime();
    return failing.entrySet().stream()
        .filter(e -> now - e.getValue().sinceNanos >= errorAfterNanos)
        .max(Comparator.comparingLong(e -> now - e.getValue().sinceNanos))
        .map(e -> "projection [" + projection + "] has failed on [" + e.getKey() + "] for "
            + Duration.ofNanos(now - e.getValue().sinceNanos).toSeconds() + " s (" + e.getValue().attempts
            + " attempts): " + e.getValue().error
            + (longFailing(now) > 1 ? " (and " + (longFailing(now) - 1) + " more journal(s))" : ""));
  }

  private long longFailing(long now) {
    return failing.values().stream().filter(s -> now - s.sinceNanos >= errorAfterNanos).count();
  }
}
