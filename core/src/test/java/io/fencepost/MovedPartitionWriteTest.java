package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.fencepost.errors.PartitionHaltedException;
import io.fencepost.internal.JournalFenceRefusal;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.JournalOperation;
import org.apache.pekko.persistence.testkit.ProcessingPolicy;
import org.apache.pekko.persistence.testkit.ProcessingResult;
import org.apache.pekko.persistence.testkit.ProcessingSuccess$;
import org.apache.pekko.persistence.testkit.StorageFailure;
import org.apache.pekko.persistence.testkit.WriteEvents;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A write the journal database's fence refuses because a journal move took the partition's history
 * elsewhere halts the partition at once, with one ERROR naming the move: resending would be refused
 * forever, and nothing of it was applied. (The refusal itself, raised by the database, is tested on
 * H2 and PostgreSQL in the journal modules.)
 */
class MovedPartitionWriteTest {

  private static final ActorTestKit kit = InMemoryPartitions.kit("moved-partition-write-test");
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  @Test
  void aWriteTheFenceRefusesHaltsThePartitionAndNothingIsResent() {
    PartitionId partition = new PartitionId("g" + System.nanoTime(), "t", 0);
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition,
        PartitionActorSettings.create(kit.system()).withFailureBackoff(Duration.ofMillis(10), Duration.ofMillis(50)),
        PartitionEdgesTest.Picky::new));
    InMemoryPartitions.apply(kit, actor, List.of(Inbound.of(partition, 0, "a")));
    AtomicInteger writes = new AtomicInteger();
    journal.withPolicy(new ProcessingPolicy<JournalOperation>() {
      @Override
      public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
        if (op instanceof WriteEvents) {
          writes.incrementAndGet();
          return new StorageFailure(new SQLException("ERROR: journal fence: [" + persistenceId + "] belongs to "
              + "database 1 of 2 of deployment [ledger], not to this database (0 of 2)", JournalFenceRefusal.SQL_STATE));
        }
        return ProcessingSuccess$.MODULE$;
      }
    });
    Logger root = (Logger) LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME);
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    root.addAppender(seen);
    try {
      TestProbe<BatchOutcome> probe = kit.createTestProbe();
      actor.tell(new PartitionCommand.ApplyBatch(List.of(Inbound.of(partition, 1, "b")), List.of(), probe.ref()));
      BatchOutcome.Rejected refused = probe.expectMessageClass(BatchOutcome.Rejected.class, Duration.ofSeconds(10));
      assertInstanceOf(PartitionHaltedException.class, refused.error(), refused.error().toString());
      assertTrue(refused.error().getMessage().contains("belongs to database 1 of 2 of deployment [ledger]"),
          refused.error().getMessage());
      // The next batch (a resend) is refused with the halt, never written.
      actor.tell(new PartitionCommand.ApplyBatch(List.of(Inbound.of(partition, 1, "b")), List.of(), probe.ref()));
      BatchOutcome.Rejected again = probe.expectMessageClass(BatchOutcome.Rejected.class, Duration.ofSeconds(10));
      assertInstanceOf(PartitionHaltedException.class, again.error(), "a resend after the refusal");
      assertEquals(1, writes.get(), "one write reached the journal: the refused one");
      List<String> errors = seen.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.ERROR))
          .map(ILoggingEvent::getFormattedMessage).toList();
      assertEquals(1, errors.size(), "one ERROR: " + errors);
      assertTrue(errors.get(0).contains("old list of journal databases"), errors.get(0));
    } finally {
      root.detachAppender(seen);
      journal.resetPolicy();
    }
  }
}
