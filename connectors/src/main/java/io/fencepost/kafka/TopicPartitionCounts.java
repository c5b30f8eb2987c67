package io.fencepost.kafka;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;

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
    this(topic -> admin.describeTopics(List.of(topic), new DescribeTopicsOptions().timeoutMs(10_000)).allTopicNames()
        .toCompletionStage().toCompletableFuture().thenApply(d -> d.get(topic).partitions().size()), ticker);
  }

  /** @param reader reads a topic's partition count from Kafka */
  TopicPartitionCounts(Function<String, CompletableFuture<Integer>> reader, Ticker ticker) {
    this.reader = reader;
    this.ticker = ticker;
  }

  /** The topic's partition count: the last one read, refreshed in the background when old. */
  CompletionStage<Integer> of(String topic) {
    long now = ticker.nanoTime();
    Count known = counts.compute(topic, (t, c) ->
        c == null || c.count().isCompletedExceptionally() ? new Count(read(t), now) : c);
    if (now - known.readNanos() > MAX_AGE_NANOS && known.count().isDone()
        && counts.replace(topic, known, new Count(known.count(), now))) {
      // The old count serves until the new one is read (a failed refresh keeps it). Outside compute:
      // a reader that completes at once must not update the map from within its own update.
      read(topic).thenAccept(n -> counts.put(topic, new Count(CompletableFuture.completedFuture(n), now)));
    }
    return known.count();
  }

  private CompletableFuture<Integer> read(String topic) {
    return reader.apply(topic);
  }
}
