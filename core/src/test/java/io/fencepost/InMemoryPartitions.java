package io.fencepost;

import java.time.Duration;
import java.util.List;

import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.PersistenceTestKitSnapshotPlugin;

/** Partition actors on Pekko's in-memory journal and snapshot store, for the core's unit tests. */
final class InMemoryPartitions {

  private InMemoryPartitions() {
  }

  /** An actor test kit whose journal and snapshot store live in memory. */
  static ActorTestKit kit(String name) {
    return ActorTestKit.create(name, PersistenceTestKitPlugin.getInstance().config()
        .withFallback(PersistenceTestKitSnapshotPlugin.config())
        .withFallback(ConfigFactory.load()));
  }

  /** Sends one batch and returns its outcome, which must be {@code Applied}. */
  static BatchOutcome.Applied apply(ActorTestKit kit, ActorRef<PartitionCommand> actor, List<Inbound<?>> records,
      DeadLetter... dead) {
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, List.of(dead), 0, probe.ref()));
    BatchOutcome outcome = probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(10));
    if (!(outcome instanceof BatchOutcome.Applied applied)) {
      throw new AssertionError("expected the batch applied, was " + outcome);
    }
    return applied;
  }

  static PartitionStatus status(ActorTestKit kit, ActorRef<PartitionCommand> actor) {
    TestProbe<PartitionStatus> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetStatus(probe.ref()));
    return probe.expectMessageClass(PartitionStatus.class, Duration.ofSeconds(10));
  }
}
