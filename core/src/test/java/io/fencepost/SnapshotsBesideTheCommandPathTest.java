package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.function.BooleanSupplier;

import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A partition keeps applying batches while its snapshot is being stored by a deliberately slow
 * snapshot store, and recovers exactly whether the snapshot landed, landed late, or not at all.
 * Snapshot every 2 writes, keep 2.
 */
class SnapshotsBesideTheCommandPathTest {

  private static final ActorTestKit kit = ActorTestKit.create("snapshots-beside-test",
      ConfigFactory.parseString("pekko.persistence.snapshot-store.plugin = \"slow-snapshot-store\"\n"
              + "slow-snapshot-store.class = \"" + SlowSnapshotStore.class.getName() + "\"")
          .withFallback(PersistenceTestKitPlugin.getInstance().config())
          .withFallback(ConfigFactory.load()));

  private PartitionId partition;

  @BeforeEach
  void fresh() throws InterruptedException {
    SlowSnapshotStore.gate.countDown();
    await(() -> SlowSnapshotStore.pending.get() == 0);   // nothing of an earlier test lands later
    SlowSnapshotStore.reset();
    partition = new PartitionId("g" + System.nanoTime(), "t", 0);
  }

  @AfterAll
  static void stop() {
    SlowSnapshotStore.gate.countDown();
    kit.shutdownTestKit();
  }

  private ActorRef<PartitionCommand> spawn() {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system()).withSnapshotEvery(2);
    return kit.spawn(PartitionActor.behavior(partition, settings, PartitionEdgesTest.Picky::new));
  }

  private void apply(ActorRef<PartitionCommand> actor, long offset) {
    InMemoryPartitions.apply(kit, actor, List.of(Inbound.of(partition, offset, "v" + offset)));
  }

  private void stopAndWait(ActorRef<PartitionCommand> actor) {
    TestProbe<Object> watcher = kit.createTestProbe();
    actor.tell(new PartitionCommand.Stop());
    watcher.expectTerminated(actor, Duration.ofSeconds(10));
  }

  @Test
  void batchesAreAppliedWhileTheSnapshotStoreIsStillWriting() throws Exception {
    SlowSnapshotStore.gate = new CountDownLatch(1);
    ActorRef<PartitionCommand> actor = spawn();
    for (long offset = 0; offset < 10; offset++) {
      apply(actor, offset);   // each answered within 10 s although the snapshot at 2 is not stored
    }
    assertEquals(List.of(2L), SlowSnapshotStore.begun, "one snapshot in flight; the newest due (10) waits");
    assertEquals(0, SlowSnapshotStore.stored.size());

    SlowSnapshotStore.gate.countDown();
    // 2 stored, then 10 sent and stored; 10 - keep * every = 6: the one at 2 is deleted.
    await(() -> storedSequenceNrs().equals(List.of(10L)));
    apply(actor, 10);         // sequence number 11: not due
    apply(actor, 11);         // 12: due; 12 - 4 = 8 deletes nothing more
    await(() -> storedSequenceNrs().equals(List.of(10L, 12L)));
    assertEquals(List.of(2L, 10L, 12L), SlowSnapshotStore.begun);
    stopAndWait(actor);

    ActorRef<PartitionCommand> next = spawn();
    PartitionStatus status = InMemoryPartitions.status(kit, next);
    assertEquals(List.of(12L), SlowSnapshotStore.loaded, "recovered from the newest snapshot");
    assertEquals(12, status.nextOffset().getAsLong());
    assertEquals(12, status.appliedRecords());
    stopAndWait(next);
  }

  @Test
  void snapshotsOfAStoppedIncarnationLandLateAndStillRecoverExactly() throws Exception {
    SlowSnapshotStore.gate = new CountDownLatch(1);
    ActorRef<PartitionCommand> actor = spawn();
    for (long offset = 0; offset < 5; offset++) {
      apply(actor, offset);
    }
    stopAndWait(actor);       // the snapshot at 2 waits at the gate, the one at 4 behind it
    ActorRef<PartitionCommand> next = spawn();
    PartitionStatus status = InMemoryPartitions.status(kit, next);
    assertEquals(List.of(), SlowSnapshotStore.loaded, "no snapshot stored yet: every event replayed");
    assertEquals(5, status.nextOffset().getAsLong());
    assertEquals(5, status.appliedRecords());
    stopAndWait(next);        // it wrote nothing: no snapshot of its own

    SlowSnapshotStore.gate.countDown();   // the stopped incarnation's snapshots land now
    await(() -> storedSequenceNrs().equals(List.of(2L, 4L)));
    ActorRef<PartitionCommand> third = spawn();
    status = InMemoryPartitions.status(kit, third);
    assertEquals(List.of(4L), SlowSnapshotStore.loaded, "recovered from the late snapshot at 4, then event 5");
    assertEquals(5, status.nextOffset().getAsLong());
    assertEquals(5, status.appliedRecords());
    apply(third, 5);
    apply(third, 4);          // a redelivery: dropped, as the recovered offset says
    assertEquals(6, InMemoryPartitions.status(kit, third).appliedRecords());
    stopAndWait(third);
  }

  @Test
  void aRecoveryFromASnapshotKeepsTheKeyWindowOrAppliesBoundsChangedSince() throws Exception {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system()).withSnapshotEvery(2);
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, settings,
        PartitionActorTest.Counter::new));
    for (long o = 0; o < 4; o++) {   // business keys k0..k3, one write each: snapshots at 2 and 4
      InMemoryPartitions.apply(kit, actor, List.of(Inbound.of(partition, o, "k" + o)));
    }
    await(() -> storedSequenceNrs().contains(4L));
    stopAndWait(actor);

    // The later incarnations take no snapshot (one landing after this test would belong to the next).
    PartitionActorSettings later = settings.withSnapshotEvery(1000);
    ActorRef<PartitionCommand> same = kit.spawn(PartitionActor.behavior(partition, later,
        PartitionActorTest.Counter::new));
    assertEquals(1, InMemoryPartitions.apply(kit, same, List.of(Inbound.of(partition, 4, "k0"))).droppedByKey(),
        "same bounds: the window as stored");
    stopAndWait(same);

    ActorRef<PartitionCommand> smaller = kit.spawn(PartitionActor.behavior(partition,
        later.withKeyWindow(true, 2, Duration.ofHours(24)), PartitionActorTest.Counter::new));
    assertEquals(0, InMemoryPartitions.apply(kit, smaller, List.of(Inbound.of(partition, 5, "k1"))).droppedByKey(),
        "two keys kept (k2, k3): k1 is forgotten");
    assertEquals(1, InMemoryPartitions.apply(kit, smaller, List.of(Inbound.of(partition, 6, "k3"))).droppedByKey());
    stopAndWait(smaller);
  }

  private static List<Long> storedSequenceNrs() {
    return SlowSnapshotStore.stored.values().stream().map(s -> s.metadata().sequenceNr()).toList();
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "condition not met within 20 s");
      Thread.sleep(20);
    }
  }
}
