package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import com.typesafe.config.ConfigFactory;
import io.fencepost.GuaranteeStatement;
import io.fencepost.PartitionId;
import io.fencepost.Query;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineHealth;
import io.fencepost.kafka.QueryOptions;
import io.fencepost.kafka.QueryResult;
import io.fencepost.kafka.QueryTarget;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;

/** {@code fencepost ledger} stops itself, for its supervisor, once its pipeline is not live, and not before. */
class LivenessWatchTest {

  @Test
  void aPipelineThatIsNoLongerLiveStopsTheNodeWithItsReason() throws Exception {
    AtomicReference<PipelineHealth> health = new AtomicReference<>(new PipelineHealth("ledger", true, false,
        "[ledger] payments-1 stalled"));
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "liveness-watch",
        ConfigFactory.parseString("pekko.loglevel = WARNING").withFallback(ConfigFactory.load()));
    try {
      LivenessWatch watch = LivenessWatch.start(new FixedHealth(health), system);
      Thread.sleep(2_500);   // two checks of a live (if unready) pipeline
      assertFalse(system.getWhenTerminated().toCompletableFuture().isDone(), "a live node keeps running");
      assertEquals("", watch.lastReason());

      health.set(new PipelineHealth("ledger", false, false, "[ledger] the journal [jdbc-journal] has not answered"));
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      assertEquals(LivenessWatch.REASON, CoordinatedShutdown.get(system).getShutdownReason().orElseThrow());
      assertEquals("[ledger] the journal [jdbc-journal] has not answered", watch.lastReason());
    } finally {
      system.terminate();
    }
  }

  private record FixedHealth(AtomicReference<PipelineHealth> current) implements Pipeline {
    @Override
    public String name() {
      return "ledger";
    }

    @Override
    public GuaranteeStatement guarantee() {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletionStage<List<PartitionView>> status() {
      return CompletableFuture.completedFuture(List.of());
    }

    @Override
    public CompletionStage<List<PartitionView>> clusterStatus() {
      throw new UnsupportedOperationException();
    }

    @Override
    public PipelineHealth health() {
      return current.get();
    }

    @Override
    public <R> CompletionStage<QueryResult<R>> query(QueryTarget target, Query<R> query, QueryOptions options) {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletionStage<PartitionId> partitionOf(QueryTarget target) {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletionStage<Done> stop() {
      return CompletableFuture.completedFuture(Done.getInstance());
    }
  }
}
