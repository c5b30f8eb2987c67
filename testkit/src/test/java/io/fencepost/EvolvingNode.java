package io.fencepost;

import java.lang.reflect.Constructor;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PipelineSettings;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * One node of the reservations service of {@link MixedVersionsIT}, in its own JVM: its partition
 * actor ({@code evolving.Reservations}), event ({@code evolving.Reserved}) and migration
 * ({@code evolving.ReservedMigration}) are whichever version of them the process's classpath holds.
 * Pekko's local provider: the nodes share the consumer group and the journal, not a Pekko cluster.
 * Prints {@code READY} once its pipeline runs; SIGTERM drains and stops it.
 *
 * <p>Arguments: bootstrap servers, topic, group, journal URL, user, password.
 */
public final class EvolvingNode {

  /** Reserved units per SKU: the state, the same class in every version. */
  public record Stock(Map<String, Integer> reserved) implements JacksonSerializable {
    public static final Stock EMPTY = new Stock(Map.of());

    /** Units of {@code sku} reserved so far. */
    public int of(String sku) {
      return reserved.getOrDefault(sku, 0);
    }

    public Stock add(String sku, int units) {
      Map<String, Integer> next = new TreeMap<>(reserved);
      next.merge(sku, units, Integer::sum);
      return new Stock(next);
    }
  }

  private EvolvingNode() {
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  public static void main(String[] args) throws Exception {
    JournalDatabase db = JournalDatabase.of(args[3], args[4], args[5]);
    Config config = ConfigFactory.parseString("""
        pekko.actor.provider = local
        pekko.serialization.jackson.migrations { "evolving.Reserved" = "evolving.ReservedMigration" }
        fencepost.pipelines.reservations {
          kafka-clients { session.timeout.ms = 6000, heartbeat.interval.ms = 1000 }
          batch.max-records = 10
          partition-actor.snapshot-every = 4
        }
        """).withFallback(db.pekkoConfig()).withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "reservations", config);
    Constructor<?> actor = Class.forName("evolving.Reservations").getConstructor(PartitionContext.class);
    Function<PartitionContext, PartitionActor<String, ?, ?>> factory = ctx -> {
      try {
        return (PartitionActor<String, ?, ?>) actor.newInstance(ctx);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException(e);
      }
    };
    KafkaPipeline.create(system, factory, new StringDeserializer(), PipelineSettings.create(system, "reservations")
        .withBootstrapServers(args[0]).withTopics(List.of(args[1])).withGroupId(args[2])).start();
    System.out.println("READY");
    system.getWhenTerminated().toCompletableFuture().join();
  }
}
