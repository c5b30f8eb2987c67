package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.apache.pekko.persistence.testkit.javadsl.SnapshotTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Replayed dead letters ({@code fencepost.replay-of}) are applied only when the partition's journal
 * holds the dead letter and no replay of it was applied yet. The actor has no business key, so the
 * key window cannot hide a second application.
 */
class ReplayedDeadLettersTest {

  private static final ActorTestKit kit = InMemoryPartitions.kit("replayed-dead-letters-test");
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());

  /** Idempotency keys the external calls of records valued "call" were made with. */
  private static final List<String> CALL_KEYS = new CopyOnWriteArrayList<>();

  /** Journals the offset of every record it handles and counts them; no business key. */
  static final class Keyless extends PartitionActor<String, Long, Long> {
    Keyless(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<Long> onRecord(Long handled, Inbound<String> in) {
      if (in.value().equals("call")) {
        return Effects.call(key -> {
          CALL_KEYS.add(key);
          return "ok";
        }, outcome -> Effects.persist(in.offset()));
      }
      return Effects.persist(in.offset());
    }

    @Override
    protected Long applyEvent(Long handled, Long offset) {
      return handled + 1;
    }
  }

  private PartitionId partition;

  @BeforeEach
  void fresh() {
    journal.clearAll();
    CALL_KEYS.clear();
    partition = new PartitionId("g" + System.nanoTime(), "t", 0);
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  private ActorRef<PartitionCommand> spawn() {
    return spawn(PartitionActorSettings.create(kit.system()));
  }

  private ActorRef<PartitionCommand> spawn(PartitionActorSettings settings) {
    return kit.spawn(PartitionActor.behavior(partition, settings, Keyless::new));
  }

  private Inbound<String> record(long offset) {
    return Inbound.of(partition, offset, "v" + offset);
  }

  /** A record at {@code offset} carrying the replay header of the dead letter {@code id}. */
  private Inbound<String> replay(long offset, String id) {
    return replay(offset, id, "replay");
  }

  private Inbound<String> replay(long offset, String id, String value) {
    return new Inbound<>(partition, offset, Optional.empty(), value, Map.of(ReplayIds.HEADER,
        id.getBytes(StandardCharsets.UTF_8)), Instant.now());
  }

  private DeadLetter deadLetter(long offset, OptionalLong replayOf) {
    return new DeadLetter(partition, offset, Optional.empty(), "java.lang.IllegalStateException", "boom", 1, false,
        replayOf);
  }

  private BatchOutcome.Applied apply(ActorRef<PartitionCommand> actor, List<Inbound<?>> records, DeadLetter... dead) {
    return InMemoryPartitions.apply(kit, actor, records, dead);
  }

  private PartitionStatus status(ActorRef<PartitionCommand> actor) {
    return InMemoryPartitions.status(kit, actor);
  }

  private ActorRef<PartitionCommand> restart(ActorRef<PartitionCommand> actor) {
    kit.stop(actor, Duration.ofSeconds(10));
    return spawn();
  }

  @Test
  void aDeadLetterIsAppliedOnceHoweverOftenItIsReplayedAcrossRestarts() {
    ActorRef<PartitionCommand> actor = spawn();
    apply(actor, List.of(record(0), record(2)), deadLetter(1, OptionalLong.empty()));
    String id = ReplayIds.id(partition, 1);

    BatchOutcome.Applied first = apply(actor, List.of(replay(3, id)));
    assertEquals(1, first.applied(), "the first replay of the dead letter at 1 is applied");
    BatchOutcome.Applied second = apply(actor, List.of(replay(4, id)));
    assertEquals(0, second.applied(), "a second replay run is dropped");
    assertEquals(1, second.droppedRedelivery());

    actor = restart(actor);
    BatchOutcome.Applied third = apply(actor, List.of(replay(5, id), replay(6, id)));
    assertEquals(0, third.applied(), "after recovery too");
    PartitionStatus s = status(actor);
    assertEquals(3, s.appliedRecords(), "offsets 0, 2 and the one replay of 1");
    assertEquals(OptionalLong.of(7), s.nextOffset());
  }

  @Test
  void aSnapshotKeepsWhichDeadLettersAreReplayable() {
    PartitionActorSettings everyTwo = PartitionActorSettings.create(kit.system()).withSnapshotEvery(2);
    ActorRef<PartitionCommand> actor = spawn(everyTwo);
    apply(actor, List.of(record(0), record(2)), deadLetter(1, OptionalLong.empty()), deadLetter(3, OptionalLong.empty()));
    apply(actor, List.of(replay(4, ReplayIds.id(partition, 1))));   // the second write: a snapshot at it
    kit.stop(actor, Duration.ofSeconds(10));
    awaitSnapshot();
    actor = spawn(everyTwo);
    BatchOutcome.Applied outcome = apply(actor, List.of(replay(5, ReplayIds.id(partition, 1)),
        replay(6, ReplayIds.id(partition, 3))));
    assertEquals(1, outcome.applied(), "3 is still replayable after recovery from the snapshot, 1 is not");
    assertEquals(1, outcome.droppedRedelivery());
  }

  private void awaitSnapshot() {
    SnapshotTestKit snapshots =
        SnapshotTestKit.create(kit.system());
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (snapshots.persistedInStorage(partition.persistenceId()).isEmpty() && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertEquals(1, snapshots.persistedInStorage(partition.persistenceId()).size(), "a snapshot was stored");
  }

  @Test
  void aReplayOfARecordTheJournalNeverDeadLetteredIsDropped() {
    ActorRef<PartitionCommand> actor = spawn();
    // Offset 1 was dead-lettered by an owner that lost the partition before journaling it; the next owner
    // applied it. Its dead letter is in the topic all the same.
    apply(actor, List.of(record(0), record(1), record(2)));
    PartitionId otherGroup = new PartitionId(partition.group() + "-other", partition.topic(), partition.partition());
    PartitionId otherPartition = new PartitionId(partition.group(), partition.topic(), 9);
    BatchOutcome.Applied outcome = apply(actor, List.of(replay(3, ReplayIds.id(partition, 1)),
        replay(4, ReplayIds.id(otherGroup, 2)), replay(5, ReplayIds.id(otherPartition, 2)), replay(6, "not-an-id"),
        record(7)));
    assertEquals(3, outcome.applied(), "a header naming no dead letter of this topic-partition makes no replay: 5, 6, 7");
    assertEquals(2, outcome.droppedRedelivery(), "this group's applied record and another group's dead letter");
    // Another group's replay this group could not decode: dead-lettered, but never replayable here.
    apply(actor, List.of(), deadLetter(8, OptionalLong.of(ReplayIds.NOT_REPLAYABLE)));
    assertEquals(0, apply(actor, List.of(replay(9, ReplayIds.id(partition, 8)))).applied());
    assertEquals(6, status(actor).appliedRecords());
  }

  @Test
  void aReplayThatFailsAgainReplacesItsDeadLetter() {
    ActorRef<PartitionCommand> actor = spawn();
    apply(actor, List.of(record(0)), deadLetter(1, OptionalLong.empty()));
    // The replay of 1 (at 2) fails again: its dead letter at 2 takes 1's place.
    apply(actor, List.of(), deadLetter(2, OptionalLong.of(1)));
    actor = restart(actor);
    BatchOutcome.Applied outcome = apply(actor, List.of(replay(3, ReplayIds.id(partition, 1)),
        replay(4, ReplayIds.id(partition, 2))));
    assertEquals(1, outcome.applied(), "the record is applied once, from its newest dead letter");
    assertEquals(1, outcome.droppedRedelivery(), "the replaced dead letter at 1 is not replayable any more");
    assertEquals(2, status(actor).appliedRecords());
  }

  @Test
  void withPerKeyOrderingAReplayThatFailsAgainParksItsKeyBehindTheNewDeadLetter() {
    ActorRef<PartitionCommand> actor = spawn(PartitionActorSettings.create(kit.system()).withPerKeyOrdering(true));
    Optional<String> k = Optional.of("K");
    apply(actor, List.of(Inbound.of(partition, 0, "v0")),
        new DeadLetter(partition, 1, k, "java.lang.IllegalStateException", "boom", 1));
    // The replay of 1 (at 2) fails again; as the pipeline sends it: its dead letter without the record.
    apply(actor, List.of(), new DeadLetter(partition, 2, k, "java.lang.IllegalStateException", "again", 1, false,
        OptionalLong.of(1)));
    Inbound<String> replayOf2 = new Inbound<>(partition, 3, k, "replay", Map.of(ReplayIds.HEADER,
        ReplayIds.id(partition, 2).getBytes(StandardCharsets.UTF_8)), Instant.now());
    assertEquals(1, apply(actor, List.of(replayOf2)).applied(), "the replay of the newest dead letter frees K");
    assertEquals(1, apply(actor, List.of(new Inbound<>(partition, 4, k, "v4", Map.of(), Instant.now()))).applied(),
        "a later record of K is applied, not parked");
  }

  @Test
  void theExternalCallOfAReplayedRecordUsesTheOriginalRecordsIdempotencyKey() {
    ActorRef<PartitionCommand> actor = spawn();
    apply(actor, List.of(record(0)), deadLetter(1, OptionalLong.empty()));
    // The first replay (at 2) fails again; the second is a replay of 2 that carries the origin 1.
    apply(actor, List.of(), deadLetter(2, OptionalLong.of(1)));
    Inbound<String> second = new Inbound<>(partition, 3, Optional.empty(), "call", Map.of(
        ReplayIds.HEADER, ReplayIds.id(partition, 2).getBytes(StandardCharsets.UTF_8),
        ReplayIds.ORIGIN_HEADER, ReplayIds.id(partition, 1).getBytes(StandardCharsets.UTF_8)), Instant.now());
    assertEquals(1, apply(actor, List.of(second)).applied());
    assertEquals(List.of(record(1).positionKey()), CALL_KEYS, "the key of offset 1, where the record was first");
  }

  @Test
  void aReplayedRecordKeepsTheOriginalRecordsIdentity() {
    Inbound<String> replayed = replay(40, ReplayIds.id(partition, 7));
    assertEquals(OptionalLong.of(7), replayed.replayOf());
    assertEquals(record(7).positionKey(), replayed.originKey());
    assertEquals(record(40).positionKey(), record(40).originKey());
    PartitionId other = new PartitionId(partition.group(), partition.topic(), 1);
    assertEquals(OptionalLong.empty(), replay(40, ReplayIds.id(other, 7)).replayOf(), "another partition's");
    PartitionId dashed = new PartitionId("my-group", "pay-ments-1", 0);
    assertEquals(true, ReplayIds.namesTopicPartition(dashed, "other-group-pay-ments-1-0-17"));
    assertEquals(false, ReplayIds.namesTopicPartition(dashed, "other-group-pay-ments-1-1-17"));
    assertEquals(false, ReplayIds.namesTopicPartition(dashed, "-pay-ments-1-0-17"), "no group");
    assertEquals(false, ReplayIds.namesTopicPartition(dashed, "g-pay-ments-1-0-"), "no offset");
  }
}
