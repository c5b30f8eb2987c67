package io.fencepost.kafka;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import io.fencepost.BatchOutcome;
import io.fencepost.PartitionId;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The outbox relays of the partitions this node owns, one per partition, and their producer. */
final class RelayRegistry implements OwnershipSeams.Relays {

  private static final Logger log = LoggerFactory.getLogger(RelayRegistry.class);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  /** At least once: the producer this node's relays share; null exactly once (each relay has its own). */
  private final HealingProducer producer;
  private final Properties producerProperties;
  private final KafkaClients clients;
  private final Map<String, Object> consumerProperties;
  private final Backoff backoff;
  private final Map<PartitionId, Running> relays = new ConcurrentHashMap<>();

  /** A relay and its stop flag (which a restarted incarnation of it reads). */
  private record Running(ActorRef<OutboxRelay.Command> ref, AtomicBoolean stopRequested) {
  }
  private final AtomicLong started = new AtomicLong();
  private final AtomicBoolean offWarned = new AtomicBoolean();
  private final Ticker ticker;

  RelayRegistry(ActorSystem<?> system, PipelineSettings settings, KafkaClients clients, Map<String, Object> consumer,
      Ticker ticker) {
    this.system = system;
    this.ticker = ticker;
    this.settings = settings;
    this.clients = clients;
    this.consumerProperties = consumer;
    if (settings.outbox().enabled()) {
      this.producerProperties = ClientProperties.producer(system, settings, settings.outbox().producer(),
          "fencepost.pipelines." + settings.name() + ".outbox.producer-kafka-clients");
      this.producer = exactlyOnce() ? null : new HealingProducer(settings.name(), "outbox", producerProperties,
          () -> clients.producer(producerProperties));
    } else {
      this.producerProperties = null;
      this.producer = null;
    }
    this.backoff = new Backoff(settings.outbox().pollInterval(),
        max(settings.outbox().pollInterval(), settings.retryBackoff().max()), 2);
  }

  /** Runs the relay of a partition this node now owns (its stream seeked to the actor's offset). */
  @Override
  public void start(PartitionId id) {
    if (!settings.outbox().enabled()) {
      return;
    }
    relays.computeIfAbsent(id, this::startRelay);
  }

  private Running startRelay(PartitionId k) {
    AtomicBoolean stopRequested = new AtomicBoolean();
    OutboxSettings outbox = settings.outbox().placed(k.journalDatabase(settings.partitionActor().journalDatabases()));
    Supplier<RelayTransactions> transactions = exactlyOnce()
        ? () -> new RelayTransactions(system, k, outbox, producerProperties, clients::producer, consumerProperties,
            clients::consumer)
        : () -> null;
    return new Running(system.systemActorOf(
        OutboxRelay.create(k, outbox, producer, transactions, backoff, stopRequested, ticker),
        "fencepost-outbox-" + settings.name() + "-" + started.incrementAndGet(), Props.empty()), stopRequested);
  }

  private boolean exactlyOnce() {
    return settings.outbox().delivery() == OutboxSettings.Delivery.EXACTLY_ONCE;
  }

  @Override
  public void stop(PartitionId id) {
    Running relay = relays.remove(id);
    if (relay != null) {
      relay.stopRequested().set(true);
      relay.ref().tell(OutboxRelay.Stop.INSTANCE);
    }
  }

  void stopAll() {
    relays.keySet().forEach(this::stop);
  }

  /** After a batch was applied: wakes its partition's relay when the batch wrote outbox records. */
  void afterApplied(PartitionId id, BatchOutcome.Applied applied) {
    if (applied.published() == 0) {
      return;
    }
    Running relay = relays.get(id);
    if (relay != null) {
      relay.ref().tell(OutboxRelay.Wake.INSTANCE);
    } else if (!settings.outbox().enabled() && offWarned.compareAndSet(false, true)) {
      log.error("[{}] handlers write outbox records (Effects.andPublish) but fencepost.pipelines.{}.outbox.enabled "
          + "is off: they are journaled and wait unpublished; set it to on", settings.name(), settings.name());
    }
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  void close(Duration timeout) {
    if (producer != null) {
      producer.close(timeout);
    }
  }
}
