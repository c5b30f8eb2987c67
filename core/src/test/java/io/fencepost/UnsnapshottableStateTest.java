package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.typesafe.config.ConfigFactory;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A state no serializer is bound to can never be snapshotted: the partition goes on (every record
 * applied), and each snapshot it cannot store is counted on {@code fencepost.snapshot.failures} and
 * said at ERROR naming the state's class and the binding to add, instead of a WARN per snapshot.
 */
class UnsnapshottableStateTest {

  private static final ActorTestKit kit = ActorTestKit.create("unsnapshottable-state-test",
      ConfigFactory.parseString("pekko.persistence.snapshot-store.plugin = \"slow-snapshot-store\"\n"
              + "slow-snapshot-store.class = \"" + SlowSnapshotStore.class.getName() + "\"")
          .withFallback(PersistenceTestKitPlugin.getInstance().config())
          .withFallback(ConfigFactory.load()));
  private static final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  static {
    Metrics.addRegistry(registry);
  }

  @AfterAll
  static void stop() {
    Metrics.removeRegistry(registry);
    kit.shutdownTestKit();
  }

  /** A state with no serializer bound to it (nor java.io.Serializable). */
  record Tally(long records) {
  }

  static final class Tallying extends PartitionActor<String, Tally, String> {
    Tallying(PartitionContext context) {
      super(context);
    }

    @Override
    protected Tally emptyState() {
      return new Tally(0);
    }

    @Override
    protected Effects<String> onRecord(Tally tally, Inbound<String> in) {
      return Effects.persist(in.value());
    }

    @Override
    protected Tally applyEvent(Tally tally, String event) {
      return new Tally(tally.records() + 1);
    }
  }

  @Test
  void aStateThatCannotBeSerializedIsCountedAndSaidAtErrorWhileThePartitionGoesOn() throws Exception {
    PartitionId partition = new PartitionId("g" + System.nanoTime(), "t", 0);
    Logger root = (Logger) LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME);
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    root.addAppender(seen);
    try {
      ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition,
          PartitionActorSettings.create(kit.system()).withSnapshotEvery(2), Tallying::new));
      for (long offset = 0; offset < 6; offset++) {
        InMemoryPartitions.apply(kit, actor, List.of(Inbound.of(partition, offset, "v" + offset)));
        if (offset % 2 == 1) {
          // the snapshot due at offset + 1 has failed before the next falls due (one due while another is
          // in flight replaces any waiting one: snapshots are taken beside the command path, newest first)
          long due = (offset + 1) / 2;
          await(() -> failures(partition) == due);
        }
      }
      assertEquals(3.0, failures(partition), "the snapshots due at 2, 4 and 6");
      assertEquals(6, InMemoryPartitions.status(kit, actor).appliedRecords(), "the partition goes on");
      List<String> errors = seen.list.stream().filter(e -> e.getLevel() == Level.ERROR)
          .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("snapshot")).toList();
      assertEquals(2, errors.size(), "the first, then the third in a row: " + errors);
      assertTrue(errors.get(0).contains("the partition's state cannot be serialized"), errors.get(0));
      assertTrue(errors.get(0).contains(Tally.class.getName()), "names the state's class: " + errors.get(0));
      assertTrue(errors.get(0).contains("pekko.actor.serialization-bindings"), errors.get(0));
      assertEquals(List.of(), seen.list.stream().filter(e -> e.getLevel() == Level.WARN
          && e.getFormattedMessage().contains("snapshot")).map(ILoggingEvent::getFormattedMessage).toList());
      TestProbe<Object> watcher = kit.createTestProbe();
      actor.tell(new PartitionCommand.Stop());
      watcher.expectTerminated(actor, Duration.ofSeconds(10));
    } finally {
      root.detachAppender(seen);
    }
  }

  private static double failures(PartitionId partition) {
    var counter = registry.find("fencepost.snapshot.failures").tag("group", partition.group()).counter();
    return counter == null ? -1 : counter.count();
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not met within 20 s");
      }
      Thread.sleep(20);
    }
  }
}
