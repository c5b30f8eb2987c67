package io.fencepost.internal.writepath;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.fencepost.annotation.InternalApi;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * INTERNAL API: what outlives a partition actor's incarnation on one actor system: when each
 * partition last said a failure that repeats at ERROR (rate-limited, since every failed recovery
 * ends the incarnation and its backoff starts a new one), and how many of its key window reads in a
 * row failed. Kept per actor system (another system in the same JVM, a test's, counts on its own)
 * and forgotten once the partition recovers.
 */
@InternalApi
public final class PartitionFailures implements Extension {

  private static final long ERROR_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

  private static final ExtensionId<PartitionFailures> ID = new ExtensionId<>() {
    @Override
    public PartitionFailures createExtension(ActorSystem<?> system) {
      return new PartitionFailures();
    }
  };

  private final Map<String, Long> lastError = new ConcurrentHashMap<>();
  private final Map<String, Integer> windowReadsFailed = new ConcurrentHashMap<>();

  private PartitionFailures() {
  }

  public static PartitionFailures get(ActorSystem<?> system) {
    return ID.apply(system);
  }

  /** Whether this partition's ERROR is due (at most one a minute), recording it if so. */
  boolean errorDue(String persistenceId) {
    long now = System.nanoTime();
    Long last = lastError.get(persistenceId);
    if (last != null && now - last < ERROR_EVERY_NANOS) {
      return false;
    }
    lastError.put(persistenceId, now);
    return true;
  }

  /** One more key window read of this partition failed; returns how many in a row. */
  int windowReadFailed(String persistenceId) {
    return windowReadsFailed.merge(persistenceId, 1, Integer::sum);
  }

  /** A key window read of this partition succeeded: the count starts again. */
  void windowRead(String persistenceId) {
    windowReadsFailed.remove(persistenceId);
  }

  /** The partition recovered: its ERROR may be said at once next time. */
  void recovered(String persistenceId) {
    lastError.remove(persistenceId);
  }

  /** Partitions with something remembered (for tests). */
  int remembered() {
    return lastError.size() + windowReadsFailed.size();
  }
}
