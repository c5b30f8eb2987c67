package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.kafka.CommitterSettings;
import org.apache.pekko.kafka.ConsumerSettings;
import org.apache.pekko.kafka.RestrictedConsumer;
import org.apache.pekko.kafka.Subscriptions;
import org.apache.pekko.kafka.javadsl.Committer;
import org.apache.pekko.kafka.javadsl.Consumer;
import org.apache.pekko.kafka.javadsl.PartitionAssignmentHandler;

/**
 * The idiomatic at-least-once stream of pekko-connectors-kafka: {@code Consumer.committableSource}
 * crediting an in-memory map, then {@code Committer.sink} with default committer settings (offsets
 * committed in batches after the effects), stopped through its {@code DrainingControl} (so with
 * {@code stop-timeout} 0, as documented for that control). Latency ends when the in-memory effect is done.
 */
final class ConnectorsPeer implements Peer {

  @Override
  public String name() {
    return "connectors-alo";
  }

  @Override
  public String description() {
    return "pekko-connectors-kafka committableSource + Committer.sink, in-memory effect";
  }

  @Override
  public Promise promise() {
    return Promise.AT_LEAST_ONCE;
  }

  @Override
  public Outcome run(Run run) throws Exception {
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "bench-connectors",
        ConfigFactory.parseString("pekko.loglevel = WARNING").withFallback(ConfigFactory.load()));
    try {
      Heap.resetPeak();
      int records = records(run.workload());
      MemoryLedger ledger = new MemoryLedger();
      Latency.Recorder latency = run.latency() ? run.probe().recorder() : null;
      Progress progress = new Progress();
      ConsumerSettings<String, String> settings = ConsumerSettings
          .create(system, new StringDeserializer(), new StringDeserializer())
          .withBootstrapServers(run.infra().bootstrapServers())
          .withGroupId(run.infra().uniqueName("bench-connectors"))
          .withProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest")
          .withProperty(ConsumerConfig.RECEIVE_BUFFER_CONFIG, Consumers.RECEIVE_BUFFER_BYTES)
          .withStopTimeout(Duration.ZERO);
      Consumer.DrainingControl<Done> control = Consumer
          .committableSource(settings, Subscriptions.topics(run.topic())
              .withPartitionAssignmentHandler(new ReadyWhenAssigned(run.partitions(), () -> {
                progress.started();
                run.ready();
              })))
          .map(message -> {
            progress.started();
            if (ledger.credit(Payment.parse(message.record().value())) == records) {
              progress.finished();
            }
            if (latency != null) {
              latency.done(message.record().timestamp());
            }
            return message.committableOffset();
          })
          .toMat(Committer.sink(CommitterSettings.create(system)), Consumer::createDrainingControl)
          .run(system);
      long deadline = System.nanoTime() + Consumers.RUN_TIMEOUT.toNanos();
      while (ledger.distinct() < records && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      control.drainAndShutdown(system.executionContext()).toCompletableFuture().get(60, TimeUnit.SECONDS);
      return ledger.outcome(records, progress.seconds(), Heap.peakMib(), latency == null ? null : run.probe().steady());
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  /** Calls {@code onReady} once all partitions are assigned to the stream's consumer. */
  private static final class ReadyWhenAssigned implements PartitionAssignmentHandler {
    private final int partitions;
    private final Runnable onReady;
    private final Set<TopicPartition> assigned = ConcurrentHashMap.newKeySet();
    private boolean fired;

    ReadyWhenAssigned(int partitions, Runnable onReady) {
      this.partitions = partitions;
      this.onReady = onReady;
    }

    @Override
    public void onAssign(Set<TopicPartition> tps, RestrictedConsumer consumer) {
      assigned.addAll(tps);
      if (!fired && assigned.size() == partitions) {
        fired = true;
        onReady.run();
      }
    }

    @Override
    public void onRevoke(Set<TopicPartition> tps, RestrictedConsumer consumer) {
      assigned.removeAll(tps);
    }

    @Override
    public void onLost(Set<TopicPartition> tps, RestrictedConsumer consumer) {
      assigned.removeAll(tps);
    }

    @Override
    public void onStop(Set<TopicPartition> tps, RestrictedConsumer consumer) {
    }
  }
}
