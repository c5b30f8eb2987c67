package io.fencepost.kafka;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Offsets to commit to Kafka after their batches were journaled: for consumer-lag monitoring only,
 * never read back (a partition resumes at its actor's stored offset). Streams record applied
 * offsets from any thread; only the consumer thread commits.
 */
final class OffsetCommits {

  private static final Logger log = LoggerFactory.getLogger(OffsetCommits.class);

  private final PipelineSettings settings;
  private final Map<TopicPartition, Long> pending = new ConcurrentHashMap<>();
  private final AtomicLong appliedSinceCommit = new AtomicLong();
  private final Ticker ticker;
  private long lastCommitNanos;

  OffsetCommits(PipelineSettings settings, Ticker ticker) {
    this.settings = settings;
    this.ticker = ticker;
    this.lastCommitNanos = ticker.nanoTime();
  }

  /** A batch of {@code records} was applied; {@code next} is the partition's next offset (any thread). */
  void applied(TopicPartition tp, long next, int records) {
    pending.merge(tp, next, Math::max);
    appliedSinceCommit.addAndGet(records);
  }

  /** Commits asynchronously when {@code commit.max-batch} records or {@code commit.max-interval} passed. */
  void maybeCommit(Consumer<byte[], byte[]> consumer, Set<TopicPartition> owned) {
    if (pending.isEmpty() || (appliedSinceCommit.get() < settings.commit().maxBatch()
        && ticker.nanoTime() - lastCommitNanos < settings.commit().maxInterval().toNanos())) {
      return;
    }
    pending.keySet().retainAll(owned);
    commit(consumer, owned, false);
  }

  /** Forgets what was applied for partitions this node no longer owns (lost: their commit would fail). */
  void forget(Collection<TopicPartition> tps) {
    tps.forEach(pending::remove);
  }

  /** Commits the applied offsets of {@code tps}; failures are logged at debug (lag only). */
  void commit(Consumer<byte[], byte[]> consumer, Collection<TopicPartition> tps, boolean sync) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    for (TopicPartition tp : tps) {
      Long next = pending.remove(tp);
      if (next != null) {
        offsets.put(tp, new OffsetAndMetadata(next));
      }
    }
    lastCommitNanos = ticker.nanoTime();
    appliedSinceCommit.set(0);
    if (offsets.isEmpty()) {
      return;
    }
    try {
      if (sync) {
        try {
          consumer.commitSync(offsets, Duration.ofSeconds(2));
        } catch (WakeupException e) {
          consumer.commitSync(offsets, Duration.ofSeconds(2));   // a wakeup meant for poll(): once more
        }
      } else {
        consumer.commitAsync(offsets, (o, e) -> {
          if (e != null) {
            log.debug("[{}] commit of {} failed (lag only): {}", settings.name(), o, e.toString());
          }
        });
      }
    } catch (RuntimeException e) {
      log.debug("[{}] commit of {} failed (lag only): {}", settings.name(), offsets, e.toString());
    }
  }
}
