package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** The stall watchdog seeks a partition stuck at the same place again, backing off, never for good. */
class StallRestartsTest {

  private static final long S = 1_000_000_000L;
  private static final TopicPartition TP = new TopicPartition("payments", 2);

  @Test
  void aPartitionStuckAgainAtTheSamePlaceIsRestartedAgainAfterADoublingWait() {
    StallRestarts restarts = new StallRestarts(Duration.ofSeconds(60));
    assertTrue(restarts.due(TP, 1000, 419, 0), "the first stall");
    assertFalse(restarts.due(TP, 1000, 419, 119 * S), "stuck again at the same place: wait 2 x 60 s");
    assertTrue(restarts.due(TP, 1000, 419, 120 * S), "still stuck: restarted again, not left for good");
    assertEquals(2, restarts.times(TP));
    assertFalse(restarts.due(TP, 1000, 419, 120 * S + 239 * S));
    assertTrue(restarts.due(TP, 1000, 419, 120 * S + 240 * S), "then 4 x 60 s");
    long at = 360 * S;
    for (int i = 3; i < 10; i++) {   // the wait stops doubling at 16 x stall-timeout
      long wait = 60 * S << Math.min(i, StallRestarts.MAX_DOUBLINGS);
      assertFalse(restarts.due(TP, 1000, 419, at + wait - 1));
      assertTrue(restarts.due(TP, 1000, 419, at + wait));
      at += wait;
    }
  }

  @Test
  void progressOrNewRecordsStartOver() {
    StallRestarts restarts = new StallRestarts(Duration.ofSeconds(60));
    assertTrue(restarts.due(TP, 1000, 419, 0));
    assertTrue(restarts.due(TP, 1000, 600, 61 * S), "it moved since: a new stall");
    assertTrue(restarts.due(TP, 1200, 600, 122 * S), "new records came: a new stall");
    assertEquals(1, restarts.times(TP));
    assertTrue(restarts.due(new TopicPartition("payments", 3), 1200, 600, 122 * S), "partitions are apart");
  }
}
