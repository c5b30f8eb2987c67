package io.fencepost.kafka;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import org.apache.kafka.clients.admin.Admin;

/**
 * How many partitions each topic has, read from Kafka when first needed and again in the background
 * once a count is older than {@link #MAX_AGE_NANOS} (partitions can be added to a topic): a query
 * by key maps its key to a partition without a round trip to Kafka.
 */
final class TopicPartitionCounts {

  static final long MAX_AGE_NANOS = TimeUnit.SECONDS.toNanos(30);

  private record Count(CompletableFuture<Integer> count, long readNanos) {
  }

  private final Function<String, CompletableFuture<Integer>> reader;
  private final Ticker ticker;
  private final Map<String, Count> counts = new ConcurrentHashMap<>();

  TopicPartitionCounts(Admin admin, Ticker ticker) {
    this(topic -> admin.describeTopics(List.of(topic)).allTopicNames().toCompletionStage().toCompletableFuture()
        .thenApply(d -> d.get(topic).partitions().size()), ticker);
  }

  /** @param reader reads a topic's partition count from Kafka */
  TopicPartitionCounts(Function<String, CompletableFuture<Integer>> reader, Ticker ticker) {
    this.reader = reader;
    this.ticker = ticker;
  }

  /** The topic's partition count: the last one read, refreshed in the background when old. */
  CompletionStage<Integer> of(String topic) {
    long now = ticker.nanoTime();
    Count c = counts.compute(topic, (t, known) -> {
      if (known == null || known.count().isCompletedExceptionally()) {
        return new Count(read(t), now);
      }
      if (now - known.readNanos() > MAX_AGE_NANOS && known.count().isDone()) {
        CompletableFuture<Integer> fresh = read(t);
        // The old count serves until the new one is read (a failed refresh keeps it).
        fresh.thenAccept(n -> counts.computeIfPresent(t, (k, v) -> new Count(fresh, now)));
        return new Count(known.count(), now);
      }
      return known;
    });
    return c.count();
  }

  private CompletableFuture<Integer> read(String topic) {
    return reader.apply(topic);
  }
}
