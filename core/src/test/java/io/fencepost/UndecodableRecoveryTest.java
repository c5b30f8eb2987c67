package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.NotSerializableException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.JournalOperation;
import org.apache.pekko.persistence.testkit.ProcessingPolicy;
import org.apache.pekko.persistence.testkit.ProcessingResult;
import org.apache.pekko.persistence.testkit.ProcessingSuccess$;
import org.apache.pekko.persistence.testkit.ReadEvents;
import org.apache.pekko.persistence.testkit.ReadSeqNum$;
import org.apache.pekko.persistence.testkit.StorageFailure;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A recovery that can never succeed (a journal entry that cannot be deserialized) is an ERROR and a
 * halt on the meter; one that fails while the database is away stays a WARN and heals.
 */
class UndecodableRecoveryTest {

  private static final ActorTestKit kit = InMemoryPartitions.kit("undecodable-recovery-test");
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());
  private static final SimpleMeterRegistry meters = new SimpleMeterRegistry();

  static {
    FencepostMeters.get(kit.system()).use(meters);
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  @AfterEach
  void reset() {
    journal.resetPolicy();
  }

  @Test
  void anEntryThatCannotBeDeserializedIsAnErrorAndAHalt() throws Exception {
    PartitionId partition = new PartitionId("g" + System.nanoTime(), "t", 0);
    List<ILoggingEvent> seen = recoverWhileReadsFail(partition,
        new NotSerializableException("unknown Fencepost journal manifest [B9]: written by a newer Fencepost?"));
    assertEquals(List.of("[t-0] cannot recover: a journal entry or snapshot of [" + partition.persistenceId()
        + "] cannot be deserialized (java.io.NotSerializableException: unknown Fencepost journal manifest [B9]: "
        + "written by a newer Fencepost?). Nothing of this partition is consumed on this node until a version that "
        + "reads it runs: bind a serializer for its class in pekko.actor.serialization-bindings, add a Jackson "
        + "migration for a changed event class, or roll back. Retrying with backoff"), errors(seen),
        "one ERROR (then at most one a minute)");
    assertTrue(halts(partition) >= 2, "each failed recovery counted as a halt: " + halts(partition));
  }

  @Test
  void aDatabaseAwayDuringRecoveryIsAWarnAndHeals() throws Exception {
    PartitionId partition = new PartitionId("g" + System.nanoTime(), "t", 0);
    List<ILoggingEvent> seen = recoverWhileReadsFail(partition, new SQLException("Connection refused", "08001"));
    assertEquals(List.of(), errors(seen));
    assertTrue(seen.stream().anyMatch(e -> e.getLevel() == Level.WARN
        && e.getFormattedMessage().startsWith("[t-0] recovery failed, retrying with backoff")));
    assertEquals(0, halts(partition));
  }

  /** Three recoveries fail with {@code failure}, then reads succeed: the actor answers its status. */
  private List<ILoggingEvent> recoverWhileReadsFail(PartitionId partition, Throwable failure) {
    AtomicInteger reads = new AtomicInteger();
    journal.withPolicy(new ProcessingPolicy<JournalOperation>() {
      @Override
      public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
        return (op instanceof ReadEvents || op instanceof ReadSeqNum$) && reads.incrementAndGet() <= 3
            ? new StorageFailure(failure) : ProcessingSuccess$.MODULE$;
      }
    });
    Logger root = (Logger) LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME);
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    root.addAppender(seen);
    try {
      ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition,
          PartitionActorSettings.create(kit.system()).withFailureBackoff(Duration.ofMillis(10), Duration.ofMillis(50)),
          PartitionEdgesTest.Picky::new));
      InMemoryPartitions.status(kit, actor);   // answered once a recovery succeeded
      assertTrue(reads.get() > 3, "three recoveries failed before the one that succeeded: " + reads.get());
      return List.copyOf(seen.list);
    } finally {
      root.detachAppender(seen);
    }
  }

  private static List<String> errors(List<ILoggingEvent> seen) {
    return seen.stream().filter(e -> e.getLevel() == Level.ERROR).map(ILoggingEvent::getFormattedMessage).toList();
  }

  private static double halts(PartitionId partition) {
    var counter = meters.find("fencepost.partition.halts").tag("group", partition.group())
        .tag("cause", "journal-undecodable").counter();
    return counter == null ? 0 : counter.count();
  }
}
