package io.fencepost.internal.writepath;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.Test;

/** What outlives an incarnation is kept per actor system, and forgotten once the partition recovers. */
class PartitionFailuresTest {

  @Test
  void eachActorSystemCountsOnItsOwnAndARecoveryForgets() {
    ActorTestKit first = ActorTestKit.create("partition-failures-a");
    ActorTestKit second = ActorTestKit.create("partition-failures-b");
    try {
      PartitionFailures a = PartitionFailures.get(first.system());
      PartitionFailures b = PartitionFailures.get(second.system());
      assertTrue(a.errorDue("p"));
      assertFalse(a.errorDue("p"), "at most one ERROR a minute");
      assertTrue(b.errorDue("p"), "another actor system's partition says its own");
      assertEquals(1, a.windowReadFailed("p"));
      assertEquals(2, a.windowReadFailed("p"));
      assertEquals(1, b.windowReadFailed("p"));

      a.windowRead("p");
      assertEquals(1, a.windowReadFailed("p"), "a read that succeeded starts the count again");
      a.windowRead("p");
      a.recovered("p");
      assertEquals(0, a.remembered(), "nothing kept for a partition that recovered");
      assertTrue(a.errorDue("p"), "its next failure is said at once");
    } finally {
      first.shutdownTestKit();
      second.shutdownTestKit();
    }
  }
}
