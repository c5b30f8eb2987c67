package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import io.fencepost.errors.PartitionHaltedException;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.PartitionState;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.persistence.testkit.ProcessingPolicy;
import org.apache.pekko.persistence.testkit.ProcessingResult;
import org.apache.pekko.persistence.testkit.ProcessingSuccess$;
import org.apache.pekko.persistence.testkit.ReadSnapshot;
import org.apache.pekko.persistence.testkit.SnapshotMeta;
import org.apache.pekko.persistence.testkit.SnapshotOperation;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.apache.pekko.persistence.testkit.javadsl.SnapshotTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Recovery that does not read every journal entry after its snapshot: compaction emptied entries
 * while an incarnation recovered from an older snapshot than the one covering them. The incarnation
 * must not come up with a state that lacks them.
 */
class RecoveryGapTest {

  private static final ActorTestKit kit = InMemoryPartitions.kit("recovery-gap-test");
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());
  private static final SnapshotTestKit snapshots = SnapshotTestKit.create(kit.system());

  private PartitionId partition;

  @BeforeEach
  void fresh() {
    journal.clearAll();
    snapshots.clearAll();
    snapshots.resetPolicy();
    partition = new PartitionId("g" + System.nanoTime(), "t", 0);
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  /** A journal entry of five records: offsets [from, from + 5). */
  private static BatchEvent batch(long from) {
    return new BatchEvent("earlier", from, from < 0 ? 5 : from + 5, 1L, List.of("a", "b", "c", "d", "e"),
        new long[0], 5, 0);
  }

  /**
   * The journal after compaction: the entry of offsets [0, 5) (sequence number 1) and the one of
   * [10, 15) (sequence number 2, standing for 3); the entry of [5, 10) between them was emptied.
   */
  private void journalWithAnEmptiedEntry() {
    journal.persistForRecovery(partition.persistenceId(), List.of(batch(-1), batch(10)));
  }

  private ActorRef<PartitionCommand> spawn(Duration backoffMin) {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system())
        .withFailureBackoff(backoffMin, backoffMin.multipliedBy(2));
    return kit.spawn(PartitionActor.behavior(partition, settings, PartitionEdgesTest.Picky::new));
  }

  /**
   * Asks until answered: a command that reaches the actor while a recovery of it fails is dropped
   * with that incarnation (the pipeline asks again after ask-timeout, as this does sooner).
   */
  private <T> T ask(ActorRef<PartitionCommand> actor, Function<ActorRef<T>, PartitionCommand> command,
      Class<T> type) {
    TestProbe<T> probe = kit.createTestProbe();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (true) {
      actor.tell(command.apply(probe.ref()));
      try {
        return probe.expectMessageClass(type, Duration.ofSeconds(2));
      } catch (AssertionError unanswered) {
        if (System.nanoTime() > deadline) {
          throw unanswered;
        }
      }
    }
  }

  private PartitionStatus status(ActorRef<PartitionCommand> actor) {
    return ask(actor, PartitionCommand.GetStatus::new, PartitionStatus.class);
  }

  @Test
  void anIncarnationThatMissedCompactedEntriesRecoversAgainFromTheNewestSnapshot() {
    journalWithAnEmptiedEntry();
    // The first recovery finds no snapshot; the one covering [0, 10) is stored right after it looked.
    AtomicInteger reads = new AtomicInteger();
    snapshots.withPolicy(new ProcessingPolicy<SnapshotOperation>() {
      @Override
      public ProcessingResult tryProcess(String persistenceId, SnapshotOperation op) {
        if (op instanceof ReadSnapshot) {
          reads.incrementAndGet();
        }
        return ProcessingSuccess$.MODULE$;
      }
    });
    ActorRef<PartitionCommand> actor = spawn(Duration.ofSeconds(2));
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (reads.get() == 0 && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertEquals(1, reads.get(), "the first recovery read the snapshot store");
    PartitionState<Long> covering = new PartitionState<>(10L, 10, null, "earlier", 10, 0, 2, 1L, 0, Map.of(),
        List.of());
    snapshots.persistForRecovery(partition.persistenceId(), List.of(Pair.create(new SnapshotMeta(1, 1L), covering)));

    PartitionStatus s = status(actor);
    assertEquals(OptionalLong.of(15), s.nextOffset());
    assertEquals(15, s.appliedRecords(), "the snapshot's 10 and the entry after it: nothing missing");
    assertTrue(reads.get() >= 2, "recovered again: " + reads.get() + " snapshot reads");
  }

  @Test
  void entriesMissingFromTheJournalItselfHaltThePartition() {
    journalWithAnEmptiedEntry();
    ActorRef<PartitionCommand> actor = spawn(Duration.ofMillis(10));
    BatchOutcome outcome = ask(actor, replyTo -> new PartitionCommand.ApplyBatch(List.of(Inbound.of(partition, 15, "f")),
        replyTo), BatchOutcome.class);
    PartitionHaltedException halted = assertInstanceOf(PartitionHaltedException.class,
        assertInstanceOf(BatchOutcome.Rejected.class, outcome).error());
    assertTrue(halted.reason().contains("the journal entry of offsets [10..14] follows a state whose next offset is 5")
        && halted.reason().contains("in 4 recoveries in a row"), halted.reason());
    assertEquals(OptionalLong.of(5), status(actor).nextOffset(), "nothing after the hole is applied");
  }
}
