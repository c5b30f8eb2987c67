package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** An operator's reset of a partition's stored offset, journaled: backwards, forwards, and a no-op. */
class OffsetResetTest {

  private static final ActorTestKit kit = InMemoryPartitions.kit("offset-reset-test");
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());

  private PartitionId partition;

  @BeforeEach
  void fresh() {
    journal.clearAll();
    partition = new PartitionId("g" + System.nanoTime(), "t", 0);
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  private PartitionActorSettings settings() {
    return PartitionActorSettings.create(kit.system()).withSnapshotEvery(2);
  }

  private ActorRef<PartitionCommand> spawn() {
    return kit.spawn(PartitionActor.behavior(partition, settings(), PartitionActorTest.Counter::new));
  }

  private BatchOutcome.Applied apply(ActorRef<PartitionCommand> actor, long from, long to) {
    List<Inbound<?>> records = new ArrayList<>();
    for (long o = from; o < to; o++) {
      records.add(Inbound.of(partition, o, "k" + o + "-" + System.nanoTime()));
    }
    return InMemoryPartitions.apply(kit, actor, records);
  }

  private PartitionStatus status(ActorRef<PartitionCommand> actor) {
    return InMemoryPartitions.status(kit, actor);
  }

  private OffsetReset.Result reset(long to) throws Exception {
    return OffsetReset.to(kit.system(), partition, to, settings(), Duration.ofSeconds(10)).toCompletableFuture()
        .get();
  }

  @Test
  void aResetBackForgetsWhatItsStateKeptByOffsetOfTheOldLog() throws Exception {
    ActorRef<PartitionCommand> actor = spawn();
    InMemoryPartitions.apply(kit, actor, List.of(Inbound.of(partition, 0, "a")), new DeadLetter(partition, 1,
        Optional.empty(), "java.lang.IllegalStateException", "boom", 1));
    kit.stop(actor, Duration.ofSeconds(10));

    assertEquals(new OffsetReset.Result(partition, 2, 0), reset(0));
    actor = spawn();
    // The old log's dead letter at 1 is not replayable: offset 1 now names another record.
    Inbound<String> replay = new Inbound<>(partition, 0, Optional.empty(), "replayed", Map.of(
        ReplayIds.HEADER,
        ReplayIds.id(partition, 1).getBytes(StandardCharsets.UTF_8)),
        Instant.now());
    BatchOutcome.Applied outcome = InMemoryPartitions.apply(kit, actor, List.of(replay));
    assertEquals(0, outcome.applied());
    assertEquals(1, outcome.droppedRedelivery());
  }

  @Test
  void aResetMovesTheStoredOffsetBackOrForwardAndTheNextIncarnationStartsThere() throws Exception {
    ActorRef<PartitionCommand> actor = spawn();
    apply(actor, 0, 10);
    apply(actor, 10, 20);
    apply(actor, 20, 30);   // snapshots after the 2nd write: the reset recovers from one
    kit.stop(actor, Duration.ofSeconds(10));

    assertEquals(new OffsetReset.Result(partition, 30, 5), reset(5));
    actor = spawn();
    assertEquals(OptionalLong.of(5), status(actor).nextOffset());
    BatchOutcome.Applied again = apply(actor, 5, 12);
    assertEquals(7, again.applied(), "records from the new offset on are applied, not taken for redeliveries");
    kit.stop(actor, Duration.ofSeconds(10));

    int entries = journal.persistedInStorage(partition.persistenceId()).size();
    assertEquals(new OffsetReset.Result(partition, 12, 12), reset(12));
    assertEquals(entries, journal.persistedInStorage(partition.persistenceId()).size(), "a no-op writes nothing");

    assertEquals(new OffsetReset.Result(partition, 12, 100), reset(100));
    actor = spawn();
    BatchOutcome.Applied skipped = apply(actor, 12, 20);
    assertEquals(0, skipped.applied());
    assertEquals(8, skipped.droppedRedelivery(), "below the offset moved forward");
    assertEquals(37, status(actor).appliedRecords());
  }
}
