package io.fencepost.management;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.Effects;
import io.fencepost.FencepostMeters;
import io.fencepost.Inbound;
import io.fencepost.JacksonSerializable;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.Query;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.management.http.HttpQuery;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The operations endpoints over HTTP, against the in-process broker and PostgreSQL: readiness turns
 * ready once the partitions recovered, unready (naming the partition) while one stalls, ready again
 * when it moves; the Prometheus page shows per-partition lag, stalls and dead letters; liveness holds.
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class EndpointsIT {

  /** Counts records; "block" waits for {@link #release}; "poison" fails (and is dead-lettered). */
  static final class Gate extends PartitionActor<String, Long, String> {
    static volatile CountDownLatch release = new CountDownLatch(0);

    Gate(PartitionContext context) {
      super(context);
    }

    @Override
    protected Long emptyState() {
      return 0L;
    }

    @Override
    protected Effects<String> onRecord(Long state, Inbound<String> in) {
      if (in.value().equals("poison")) {
        throw new IllegalArgumentException("poison");
      }
      if (in.value().equals("block")) {
        try {
          release.await(3, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return Effects.persist(in.value());
    }

    @Override
    protected Long applyEvent(Long state, String event) {
      return state + 1;
    }

    @Override
    protected Object onQuery(Long state, Query<?> query) {
      return new Applied(((CountOf) query).key(), state);
    }
  }

  /** The records a key's partition applied. */
  public record CountOf(String key) implements Query<Applied>, JacksonSerializable {
  }

  public record Applied(String key, long records) implements JacksonSerializable {
  }

  /** The query route's request class: {@code GET /queries/counts/<key>}; parameter bad=... is refused. */
  public static final class CountRequests implements HttpQuery {
    @Override
    public Query<?> toQuery(String key, Map<String, String> parameters) {
      if (parameters.containsKey("bad")) {
        throw new IllegalArgumentException("bad must not be set, was [" + parameters.get("bad") + "]");
      }
      return new CountOf(key);
    }
  }

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void readinessFollowsRecoveryAndStallsAndPrometheusShowsPerPartitionLag() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("endpoints_it");
    db.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("ops");
      String group = KafkaBroker.uniqueName("ops");
      broker.createTopic(topic, 2);
      Config config = ConfigFactory.parseString("fencepost.management.port = 0\n"
              + "fencepost.management.queries.counts { pipeline = ops, topic = \"" + topic + "\", request = \""
              + CountRequests.class.getName() + "\" }\n"
              + "fencepost.management.queries.elsewhere { pipeline = ops, topic = not-consumed, request = \""
              + CountRequests.class.getName() + "\" }\n"
              + "fencepost.pipelines.ops { stall-timeout = 2s, progress-interval = 0s }")
          .withFallback(ClusterNodes.node("ops", 0, List.of()))
          .withFallback(db.pekkoConfig())
          .withFallback(ConfigFactory.load());
      ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "ops", config);
      try {
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        FencepostMeters.get(system).use(prometheus);
        ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
        InetSocketAddress at = FencepostManagement.start(system).toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertTrue(at.getAddress().isLoopbackAddress(), "bound to loopback by default: " + at);
        String base = "http://127.0.0.1:" + at.getPort() + "/";

        assertEquals(500, get(base + "ready").statusCode());
        assertTrue(get(base + "ready").body().contains("no pipeline runs on this node"), get(base + "ready").body());
        assertEquals(200, get(base + "alive").statusCode());

        produce(broker, topic, 0, "a", "b", "poison");
        produce(broker, topic, 1, "c", "d");
        Pipeline pipeline = KafkaPipeline.create(system, Gate::new, new StringDeserializer(),
            PipelineSettings.create(system, "ops").withBootstrapServers(broker.bootstrapServers())
                .withTopics(List.of(topic)).withGroupId(group)).start();
        // Not ready within the settle time of its first assignment, whatever the broker's speed.
        HttpResponse<String> starting = get(base + "ready");
        assertEquals(500, starting.statusCode(), starting.body());
        assertTrue(starting.body().contains("[ops] waiting for an assignment from group [" + group + "]")
            || starting.body().contains("[ops] its assignment changed"), starting.body());

        // Ready once both partitions recovered and applied what they hold.
        awaitStatus(base + "ready", 200);
        String page = awaitPage(base + "metrics", p -> gauge(p, "fencepost_partition_lag", topic, 0) == 0
            && gauge(p, "fencepost_partition_lag", topic, 1) == 0);
        assertEquals(2.0, counter(page, "fencepost_records_applied_total", topic, 0), page);
        assertEquals(1.0, counter(page, "fencepost_records_dead_lettered_total", topic, 0), page);
        assertEquals(2.0, counter(page, "fencepost_records_applied_total", topic, 1), page);
        assertEquals(0.0, gauge(page, "fencepost_partition_stalled", topic, 0), page);
        for (String jvm : List.of("jvm_memory_used_bytes{", "jvm_gc_", "jvm_threads_live_threads ",
            "jvm_classes_loaded_classes ", "process_cpu_usage ", "process_uptime_seconds ", "process_files_open_files ")) {
          assertTrue(page.contains("\n" + jvm), "Micrometer's JVM and process meters on the same page: " + jvm);
        }

        // The query route: any key's partition answers over HTTP, with its position for monotonic reads.
        int kp = org.apache.kafka.common.utils.Utils.toPositive(org.apache.kafka.common.utils.Utils.murmur2(
            "k".getBytes(java.nio.charset.StandardCharsets.UTF_8))) % 2;
        String position = kp == 0 ? "0:2" : "1:1";   // partition 0: a, b, poison; partition 1: c, d
        HttpResponse<String> answer = get(base + "queries/counts/k?x=1");
        assertEquals(200, answer.statusCode(), answer.body());
        assertTrue(answer.body().contains("\"reply\":{\"key\":\"k\",\"records\":2}"), answer.body());
        assertTrue(answer.body().contains("\"position\":\"" + position + "\""), answer.body());
        assertEquals(Optional.of(position), answer.headers().firstValue("Fencepost-Position"));
        assertEquals(200, get(base + "queries/counts/k?after=" + position).statusCode(), "its own position");
        HttpResponse<String> ahead = get(base + "queries/counts/k?after=" + kp + ":100");
        assertEquals(504, ahead.statusCode(), ahead.body());
        HttpResponse<String> malformed = get(base + "queries/counts/k?after=x");
        assertEquals(400, malformed.statusCode(), malformed.body());
        assertTrue(malformed.body().contains("after must be <partition>:<offset> (both >= 0), was [x]"), malformed.body());
        assertEquals(400, get(base + "queries/counts/k?after=" + (1 - kp) + ":0").statusCode(), "another partition");
        HttpResponse<String> refused = get(base + "queries/counts/k?bad=yes");
        assertEquals(400, refused.statusCode(), refused.body());
        assertTrue(refused.body().contains("bad must not be set, was [yes]"), refused.body());
        HttpResponse<String> unknown = get(base + "queries/nope/k");
        assertEquals(404, unknown.statusCode(), unknown.body());
        assertTrue(unknown.body().contains("no query route [nope]; configured: [counts, elsewhere]"), unknown.body());
        HttpResponse<String> misrouted = get(base + "queries/elsewhere/k");
        assertEquals(500, misrouted.statusCode(), misrouted.body());
        assertTrue(misrouted.body().contains("query route [elsewhere] (fencepost.management.queries.elsewhere): [ops] "
            + "consumes [" + topic + "], not [not-consumed]"), misrouted.body());

        // Partition 0's handler blocks: the partition stalls, readiness names it, lag grows.
        Gate.release = new CountDownLatch(1);
        produce(broker, topic, 0, "block", "e", "f", "g", "h");
        HttpResponse<String> unready = awaitStatus(base + "ready", 500);
        assertTrue(unready.body().contains(topic + "-0 stalled"), unready.body());
        assertTrue(unready.body().contains("Check [io.fencepost.management.internal.ReadinessCheck] failed: [ops] ")
            && !unready.body().contains("$$Lambda"), "the check is named, not a generated lambda: " + unready.body());
        assertTrue(!unready.body().contains(topic + "-1"), "partition 1 is fine: " + unready.body());
        page = awaitPage(base + "metrics", p -> gauge(p, "fencepost_partition_lag", topic, 0) == 5);
        assertEquals(1.0, gauge(page, "fencepost_partition_stalled", topic, 0), page);
        assertEquals(0.0, gauge(page, "fencepost_partition_stalled", topic, 1), page);
        assertEquals(0.0, gauge(page, "fencepost_partition_lag", topic, 1), page);
        assertEquals(200, get(base + "alive").statusCode(), "a stalled partition is not a dead process");

        // It moves again: ready, nothing behind, every record applied once.
        Gate.release.countDown();
        awaitStatus(base + "ready", 200);
        page = awaitPage(base + "metrics", p -> gauge(p, "fencepost_partition_lag", topic, 0) == 0);
        assertEquals(7.0, counter(page, "fencepost_records_applied_total", topic, 0), page);
        assertEquals(0.0, gauge(page, "fencepost_partition_stalled", topic, 0), page);

        pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
        HttpResponse<String> stopped = get(base + "ready");
        assertEquals(500, stopped.statusCode());
        assertTrue(stopped.body().contains("no pipeline runs on this node"), stopped.body());
        assertEquals(200, get(base + "alive").statusCode());
        HttpResponse<String> elsewhere = get(base + "queries/counts/k");
        assertEquals(503, elsewhere.statusCode(), "a stopped pipeline's queries go to another node: " + elsewhere.body());
        assertEquals(Optional.of("1"), elsewhere.headers().firstValue("Retry-After"));
        page = get(base + "metrics").body();
        assertTrue(series(page, "fencepost_partition_lag", topic, 0).isEmpty(), "a partition that left has no gauges: "
            + page);
        assertTrue(series(page, "fencepost_partition_stalled", topic, 1).isEmpty(), page);
        assertEquals(7.0, counter(page, "fencepost_records_applied_total", topic, 0), "counters stay: " + page);
      } finally {
        Gate.release.countDown();
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      }
    } finally {
      Postgres.shared().dropDatabase(db);
    }
  }

  /** A misconfigured query route: the endpoints do not start, and the refusal names the key. */
  @Test
  void aMisconfiguredQueryRouteStopsTheEndpointsFromStarting() throws Exception {
    Config config = ConfigFactory.parseString("fencepost.management { port = 0, queries.balances { pipeline = "
            + "ledger, request = com.acme.Missing } }")
        .withFallback(ClusterNodes.node("misrouted", 0, List.of()))
        .withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "misrouted", config);
    try {
      io.fencepost.errors.SettingsException e = org.junit.jupiter.api.Assertions.assertThrows(
          io.fencepost.errors.SettingsException.class, () -> FencepostManagement.start(system));
      assertEquals("fencepost.management.queries.balances.topic", e.key());
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void jvmMetricsOffLeavesOnlyFencepostsOwnMeters() throws Exception {
    Config config = ConfigFactory.parseString("fencepost.management { port = 0, jvm-metrics = off }")
        .withFallback(ClusterNodes.node("quiet", 0, List.of()))
        .withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "quiet", config);
    try {
      PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      FencepostMeters.get(system).use(prometheus);
      InetSocketAddress at = FencepostManagement.start(system).toCompletableFuture().get(30, TimeUnit.SECONDS);
      HttpResponse<String> page = get("http://127.0.0.1:" + at.getPort() + "/metrics");
      assertEquals(200, page.statusCode(), page.body());
      assertTrue(!page.body().contains("jvm_") && !page.body().contains("process_"), page.body());
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private HttpResponse<String> get(String url) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> awaitStatus(String url, int status) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    HttpResponse<String> last = get(url);
    while (last.statusCode() != status && System.nanoTime() < deadline) {
      Thread.sleep(200);
      last = get(url);
    }
    assertEquals(status, last.statusCode(), url + ": " + last.body());
    return last;
  }

  private String awaitPage(String url, Predicate<String> ok) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    String page = get(url).body();
    while (!ok.test(page) && System.nanoTime() < deadline) {
      Thread.sleep(200);
      page = get(url).body();
    }
    assertTrue(ok.test(page), url + " never showed what was waited for:\n" + page);
    return page;
  }

  /** The value of a partition's series on a Prometheus page; NaN when absent. */
  static double gauge(String page, String name, String topic, int partition) {
    return series(page, name, topic, partition).map(Double::parseDouble).orElse(Double.NaN);
  }

  /** The value text of a partition's series on a Prometheus page, if the page has the series. */
  static Optional<String> series(String page, String name, String topic, int partition) {
    Matcher m = Pattern.compile("(?m)^" + name + "\\{([^}]*)\\} (\\S+)$").matcher(page);
    while (m.find()) {
      String labels = m.group(1);
      if (labels.contains("topic=\"" + topic + "\"") && labels.contains("partition=\"" + partition + "\"")) {
        return Optional.of(m.group(2));
      }
    }
    return Optional.empty();
  }

  static double counter(String page, String name, String topic, int partition) {
    return gauge(page, name, topic, partition);
  }

  private static void produce(KafkaBroker broker, String topic, int partition, String... values) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(),
        new StringSerializer())) {
      for (String v : values) {
        producer.send(new ProducerRecord<>(topic, partition, null, v)).get();
      }
    }
  }
}
