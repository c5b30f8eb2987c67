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
 * snapshot store, and recovers exactly whether the snapshot landed or the incarnation died first.
 */
class SnapshotsBesideTheCommandPathTest {

  private static final ActorTestKit kit = ActorTestKit.create("snapshots-beside-test",
      ConfigFactory.parseString("pekko.persistence.snapshot-store.plugin = \"slow-snapshot-store\"\n"
              + "slow-snapshot-store.class = \"" + SlowSnapshotStore.class.getName() + "\"")
          .withFallback(PersistenceTestKitPlugin.getInstance().config())
          .withFallback(ConfigFactory.load()));

  private PartitionId partition;

  @BeforeEach
  void fresh() {
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
    assertEquals(List.of(2L), SlowSnapshotStore.begun, "one snapshot in flight; those due meanwhile wait");
    assertEquals(0, SlowSnapshotStore.stored.size());

    SlowSnapshotStore.gate.countDown();
    await(() -> SlowSnapshotStore.stored.size() == 1);
    // The next snapshots are taken at the first writes due after the store answered the previous one.
    long offset = 10;
    while (SlowSnapshotStore.begun.size() < 3) {
      apply(actor, offset++);
      assertTrue(offset < 200, "no third snapshot within 190 writes: " + SlowSnapshotStore.begun);
    }
    long second = SlowSnapshotStore.begun.get(1);
    long third = SlowSnapshotStore.begun.get(2);
    assertTrue(second >= 11 && third > second, "sequence numbers " + SlowSnapshotStore.begun);
    // keep-snapshots 2: once the third is stored, the first (2) is deleted.
    await(() -> storedSequenceNrs().equals(List.of(second, third)));
    stopAndWait(actor);

    ActorRef<PartitionCommand> next = spawn();
    PartitionStatus status = InMemoryPartitions.status(kit, next);
    assertEquals(List.of(third), SlowSnapshotStore.loaded, "recovered from the newest snapshot");
    assertEquals(offset, status.nextOffset().getAsLong());
    assertEquals(offset, status.appliedRecords());
    stopAndWait(next);
  }

  @Test
  void anIncarnationThatStopsWithItsSnapshotUnwrittenIsRecoveredFromTheEventsExactly() throws Exception {
    SlowSnapshotStore.gate = new CountDownLatch(1);
    ActorRef<PartitionCommand> actor = spawn();
    for (long offset = 0; offset < 5; offset++) {
      apply(actor, offset);
    }
    stopAndWait(actor);       // the snapshot at 2 is still waiting at the gate
    ActorRef<PartitionCommand> next = spawn();
    PartitionStatus status = InMemoryPartitions.status(kit, next);
    assertEquals(List.of(), SlowSnapshotStore.loaded, "no snapshot yet: every event replayed");
    assertEquals(5, status.nextOffset().getAsLong());
    assertEquals(5, status.appliedRecords());
    apply(next, 5);
    apply(next, 4);           // a redelivery: dropped, as the recovered offset says
    assertEquals(6, InMemoryPartitions.status(kit, next).appliedRecords());
    SlowSnapshotStore.gate.countDown();   // the old incarnation's snapshot lands late: state at 2, consistent
    await(() -> SlowSnapshotStore.stored.size() >= 1);
    stopAndWait(next);
    ActorRef<PartitionCommand> third = spawn();
    assertEquals(6, InMemoryPartitions.status(kit, third).appliedRecords());
    assertEquals(6, InMemoryPartitions.status(kit, third).nextOffset().getAsLong());
    stopAndWait(third);
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
