package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.internal.SharedGauges;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class FencepostMetersTest {

  private final ActorTestKit kit = ActorTestKit.create();
  private final PartitionId partition = new PartitionId("g", "t", 3);

  @AfterEach
  void stop() {
    kit.shutdownTestKit();
  }

  @Test
  void theGlobalRegistryIsTheDefaultAndUseReplacesItBeforeAnyFencepostMeter() {
    FencepostMeters meters = FencepostMeters.get(kit.system());
    assertSame(Metrics.globalRegistry, meters.registry());
    SimpleMeterRegistry mine = new SimpleMeterRegistry();
    meters.use(mine);
    assertSame(mine, FencepostMeters.get(kit.system()).registry());
  }

  @Test
  void useAfterFencepostMetersWereRegisteredIsRefusedNamingTheFix() {
    SimpleMeterRegistry first = new SimpleMeterRegistry();
    FencepostMeters meters = FencepostMeters.get(kit.system()).use(first);
    first.counter("other.library.meter").increment();
    meters.use(new SimpleMeterRegistry());   // no Fencepost meter yet: allowed
    meters.use(first);
    SharedGauges.get(kit.system()).gauge("fencepost.partition.lag", "lag", partition);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> meters.use(new SimpleMeterRegistry()));
    assertTrue(e.getMessage().contains("call it right after creating the actor system"), e.getMessage());
    assertSame(first, meters.registry());
  }

  @Test
  void anotherActorSystemsMetersInTheGlobalRegistryDoNotStopThisOneFromChoosingItsOwn() {
    ActorTestKit first = ActorTestKit.create();
    try {
      SharedGauges.get(first.system()).gauge("fencepost.partition.lag", "lag", partition);   // global registry
      SimpleMeterRegistry mine = new SimpleMeterRegistry();
      assertSame(mine, FencepostMeters.get(kit.system()).use(mine).registry());
    } finally {
      SharedGauges.get(first.system()).removePartition(partition);
      first.shutdownTestKit();
    }
  }

  @Test
  void aGaugeIsRegisteredOnceAndItsCellSharedThenRemovedWithThePartitionWhileCountersStay() {
    CompositeMeterRegistry composite = new CompositeMeterRegistry();
    SimpleMeterRegistry child = new SimpleMeterRegistry();
    composite.add(child);
    FencepostMeters.get(kit.system()).use(composite);
    SharedGauges shared = SharedGauges.get(kit.system());
    AtomicLong first = shared.gauge("fencepost.keys.parked", "parked", partition);
    AtomicLong second = shared.gauge("fencepost.keys.parked", "parked", partition);
    assertSame(first, second, "a second incarnation sets the same value");
    second.set(4);
    assertEquals(4.0, child.get("fencepost.keys.parked").tag("partition", "3").gauge().value());
    composite.counter("fencepost.writes.fenced", SharedGauges.tags(partition)).increment();

    shared.removePartition(partition);
    assertNull(child.find("fencepost.keys.parked").gauge(), "gone from the registries");
    assertNull(composite.find("fencepost.keys.parked").gauge());
    assertNotNull(child.find("fencepost.writes.fenced").counter(), "counters stay");
    AtomicLong again = shared.gauge("fencepost.keys.parked", "parked", partition);
    assertEquals(0, again.get(), "a partition that comes back starts afresh");
    assertEquals(0.0, child.get("fencepost.keys.parked").gauge().value());
  }
}
