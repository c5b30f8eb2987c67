package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.fencepost.errors.PartitionFencedException;
import io.fencepost.internal.BatchEvent;
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

/** A write the fence refuses is the fence doing its job: logged at WARN, never at ERROR. */
class FencedWriteLogTest {

  private static final ActorTestKit kit = InMemoryPartitions.kit("fenced-write-log-test");
  private static final PersistenceTestKit journal = PersistenceTestKit.create(kit.system());

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  @Test
  void aWriteRefusedOnTheUniqueKeyIsLoggedAtWarnAndNothingAtError() {
    PartitionId partition = new PartitionId("g" + System.nanoTime(), "t", 0);
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition,
        PartitionActorSettings.create(kit.system()).withFailureBackoff(Duration.ofMillis(10), Duration.ofMillis(50)),
        PartitionEdgesTest.Picky::new));
    InMemoryPartitions.apply(kit, actor, List.of(Inbound.of(partition, 0, "a")));
    AtomicInteger writes = new AtomicInteger();
    journal.withPolicy(new ProcessingPolicy<JournalOperation>() {
      @Override
      public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
        if (op instanceof WriteEvents && writes.incrementAndGet() == 1) {
          // Another incarnation wrote sequence number 2 first: its entry is there for the recovery.
          journal.persistForRecovery(persistenceId, List.of(new BatchEvent("other", 1, 2, 0L, List.of("b"),
              new long[0], 1, 0)));
          return new StorageFailure(new SQLException("ERROR: duplicate key value violates unique constraint "
              + "\"event_journal_pkey\"  Detail: Key (persistence_id, sequence_number)=(" + persistenceId
              + ", 2) already exists.", "23505"));
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
      // Queued behind the fenced write: the losing incarnation must not write it.
      actor.tell(new PartitionCommand.ApplyBatch(List.of(Inbound.of(partition, 2, "c")), List.of(), probe.ref()));
      BatchOutcome.Rejected fenced = probe.expectMessageClass(BatchOutcome.Rejected.class, Duration.ofSeconds(10));
      assertInstanceOf(PartitionFencedException.class, fenced.error());
      BatchOutcome.Rejected queued = probe.expectMessageClass(BatchOutcome.Rejected.class, Duration.ofSeconds(10));
      assertInstanceOf(PartitionFencedException.class, queued.error(), "the batch queued behind the fenced write");
      kit.createTestProbe().expectTerminated(actor, Duration.ofSeconds(10));
      assertEquals(List.of(), seen.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.ERROR))
          .map(e -> e.getLoggerName() + ": " + e.getFormattedMessage()).toList(), "no ERROR for a fenced write");
      assertEquals(1, seen.list.stream().filter(e -> e.getLevel() == Level.WARN
          && e.getFormattedMessage().contains("fenced: the journal refused")).count(), "one WARN names the fence");
      assertEquals(1, seen.list.stream().filter(e -> e.getLevel() == Level.WARN
          && e.getFormattedMessage().contains("fenced:")).count(), "the fence is logged once, not again at recovery");
    } finally {
      root.detachAppender(seen);
      journal.resetPolicy();
    }
  }
}
