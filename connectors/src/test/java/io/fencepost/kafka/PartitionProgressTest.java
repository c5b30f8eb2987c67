package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

/** What readiness and the stalled and lag gauges make of one assignment's progress. */
class PartitionProgressTest {

  private static final Duration STALL = Duration.ofSeconds(60);
  private static final long S = 1_000_000_000L;

  @Test
  void anIdlePartitionIsNeverStalledHoweverLongAgoItsLastBatch() {
    PartitionProgress p = flowing();
    p.lastProgressNanos = 0;
    p.busySinceNanos = 0;
    assertFalse(p.stalled(STALL, 3600 * S), "nothing buffered, nothing in flight");
  }

  @Test
  void recordsWaitingWithoutAFinishedBatchForStallTimeoutAreAStall() {
    PartitionProgress p = flowing();
    p.lastProgressNanos = 0;
    p.busySinceNanos = 100 * S;        // it got records at 100 s, after an idle hour
    p.buffered.set(3);
    assertFalse(p.stalled(STALL, 159 * S), "59 s since the records came");
    assertTrue(p.stalled(STALL, 161 * S), "61 s since the records came");
    p.buffered.set(0);
    p.inFlight = true;
    assertTrue(p.stalled(STALL, 161 * S), "a batch in flight for as long");
    p.lastProgressNanos = 150 * S;     // a batch finished at 150 s
    assertFalse(p.stalled(STALL, 161 * S));
  }

  @Test
  void aHaltedPartitionIsStalledAndSoIsOneStillRecoveringStallTimeoutAfterItsAssignment() {
    PartitionProgress p = new PartitionProgress(0);
    assertFalse(p.stalled(STALL, p.assignedNanos + 59 * S), "recovering for 59 s");
    assertTrue(p.stalled(STALL, p.assignedNanos + 61 * S), "its actor cannot recover or tell its offset");
    p.revoked = true;
    assertFalse(p.stalled(STALL, p.assignedNanos + 61 * S), "an ended assignment is nobody's stall");
    PartitionProgress halted = flowing();
    halted.halted = "journal gap";
    assertTrue(halted.stalled(STALL, halted.assignedNanos));
  }

  @Test
  void stuckTimeCountsFromTheAssignmentWhileRecoveringAndFromTheRecordsWhileFlowingButNotWhileHalted() {
    PartitionProgress recovering = new PartitionProgress(0);
    assertEquals(301 * S, recovering.stuckNanos(recovering.assignedNanos + 301 * S), "a journal that never answers");
    PartitionProgress p = flowing();
    p.lastProgressNanos = 10 * S;
    p.busySinceNanos = 100 * S;
    assertEquals(0, p.stuckNanos(500 * S), "idle: not stuck");
    p.inFlight = true;
    assertEquals(400 * S, p.stuckNanos(500 * S), "a batch in flight since its records came at 100 s");
    p.halted = "journal gap";
    assertEquals(0, p.stuckNanos(500 * S), "halted on purpose");
  }

  @Test
  void aBatchInFlightIsSilentSinceItWasSentOrLastRetried() {
    PartitionProgress p = flowing();
    assertEquals(0, p.silentInFlightNanos(500 * S), "nothing in flight");
    p.inFlightActivityNanos = 100 * S;
    p.inFlight = true;
    assertEquals(400 * S, p.silentInFlightNanos(500 * S));
    p.inFlightActivityNanos = 450 * S;   // retried at 450 s
    assertEquals(50 * S, p.silentInFlightNanos(500 * S));
  }

  @Test
  void lagIsLogEndLessStoredNextOffsetOnceBothAreKnown() {
    PartitionProgress p = new PartitionProgress(0);
    assertTrue(Double.isNaN(p.lag()), "neither known");
    p.knownNextOffset = 40;
    assertTrue(Double.isNaN(p.lag()), "log end not measured yet");
    p.logEnd = 45;
    assertEquals(5.0, p.lag());
    p.knownNextOffset = 47;            // applied past an older measurement
    assertEquals(0.0, p.lag());
  }

  private static PartitionProgress flowing() {
    PartitionProgress p = new PartitionProgress(0);
    p.flowing = true;
    return p;
  }
}
