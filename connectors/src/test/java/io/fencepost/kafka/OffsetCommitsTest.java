package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** When applied offsets are committed to Kafka: after commit.max-batch records or commit.max-interval. */
class OffsetCommitsTest {

  private static final ActorTestKit kit = ActorTestKit.create();
  private static final TopicPartition P0 = new TopicPartition("t", 0);
  private static final TopicPartition P1 = new TopicPartition("t", 1);

  private final ManualTicker ticker = new ManualTicker(0);
  private final MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.EARLIEST);

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  private OffsetCommits commits() {
    PipelineSettings base = PipelineSettings.create(kit.system(), "commits-test");
    consumer.assign(List.of(P0, P1));
    return new OffsetCommits(base.withCommit(base.commit().withMaxBatch(100).withMaxInterval(Duration.ofSeconds(5))),
        ticker);
  }

  /** What the consumer's group has committed, per partition. */
  private Map<TopicPartition, Long> committed() {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    consumer.committed(Set.of(P0, P1)).forEach((tp, o) -> offsets.put(tp, o.offset()));
    return offsets;
  }

  @Test
  void fewRecordsAreCommittedOnlyOnceMaxIntervalPassedOnThePipelinesClock() {
    OffsetCommits commits = commits();
    commits.applied(P0, 10, 10);
    commits.applied(P1, 4, 4);
    commits.applied(P0, 12, 2);
    ticker.advance(Duration.ofMillis(4_999));
    commits.maybeCommit(consumer, Set.of(P0, P1));
    assertEquals(Map.of(), committed(), "16 records in 4.999 s: not yet");

    ticker.advance(Duration.ofMillis(2));
    commits.maybeCommit(consumer, Set.of(P0, P1));
    assertEquals(Map.of(P0, 12L, P1, 4L), committed(), "the highest next offset of each partition, after 5 s");

    commits.applied(P0, 13, 1);
    ticker.advance(Duration.ofSeconds(4));
    commits.maybeCommit(consumer, Set.of(P0, P1));
    assertEquals(Map.of(P0, 12L, P1, 4L), committed(), "the interval counts from the last commit");
  }

  @Test
  void maxBatchRecordsAreCommittedAtOnceAndOnlyForPartitionsStillOwned() {
    OffsetCommits commits = commits();
    commits.applied(P0, 60, 60);
    commits.applied(P1, 40, 40);
    commits.maybeCommit(consumer, Set.of(P0));
    assertEquals(Map.of(P0, 60L), committed(), "100 records: at once; P1 is not owned any more");

    commits.applied(P1, 45, 5);
    commits.forget(List.of(P1));
    ticker.advance(Duration.ofSeconds(6));
    commits.maybeCommit(consumer, Set.of(P0, P1));
    assertEquals(Map.of(P0, 60L), committed(), "a lost partition's applied offset is not committed");
  }
}
