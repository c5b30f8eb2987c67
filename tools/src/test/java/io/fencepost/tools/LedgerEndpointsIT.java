package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import io.fencepost.examples.LedgerNode;
import io.fencepost.examples.Payment;
import io.fencepost.examples.PaymentJson;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code fencepost ledger --management-port} in its own process: the node's endpoints answer over
 * HTTP on loopback (ready once it recovered its partitions, alive, Prometheus
 * with per-partition lag, its cluster membership), and stop answering after SIGTERM.
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class LedgerEndpointsIT {

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void aLedgerNodeServesReadinessLivenessPrometheusAndClusterMembers() throws Exception {
    JournalDatabase journal = Postgres.shared().createDatabase("ledger_endpoints_it");
    journal.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("payments");
      broker.createTopic(topic, 3);
      int port = FreePorts.next();
      int management = FreePorts.next();
      List<String> args = new ArrayList<>(LedgerNode.commandLine(broker.bootstrapServers(), topic, "ledger", journal,
          port, List.of("127.0.0.1:" + port)));
      args.addAll(List.of("--management-port", Integer.toString(management)));
      JvmProcess node = JvmProcess.start("endpoints-node", Main.class.getName(), args,
          Path.of("target", "ledger-endpoints-it.log"));
      try {
        node.awaitLine("READY", Duration.ofSeconds(120));
        String base = "http://127.0.0.1:" + management + "/";
        HttpResponse<String> ready = await(base + "ready", r -> r.statusCode() == 200);
        assertEquals(200, ready.statusCode(), ready.body());
        assertEquals(200, get(base + "alive").statusCode());
        String self = "pekko://" + LedgerNode.SYSTEM_NAME + "@127.0.0.1:" + port;
        HttpResponse<String> cluster = await(base + "cluster", r -> r.body().contains("\"member\":true"));
        assertEquals(200, cluster.statusCode(), cluster.body());
        assertEquals("{\"node\":\"" + self + "\",\"member\":true,\"starts\":1,\"members\":{\"" + self + "\":\"Up\"}}",
            cluster.body());
        HttpResponse<String> metrics = await(base + "metrics", r -> r.body().contains("fencepost_partition_lag{"));
        for (int p = 0; p < 3; p++) {
          String series = "fencepost_partition_lag{group=\"ledger\",partition=\"" + p + "\",topic=\"" + topic + "\"} 0.0";
          assertTrue(await(base + "metrics", r -> r.body().contains(series)).body().contains(series),
              series + " in\n" + metrics.body());
        }
        node.terminate(Duration.ofSeconds(60));
        // The JVM's status after SIGTERM (128 + 15), once its shutdown hook drained the pipeline.
        assertEquals(143, node.awaitExit(Duration.ofSeconds(60)), "stopped by SIGTERM");
        assertEquals(1, node.countLines("[ledger] stopping: draining in-flight batches of 3 partition(s)"),
            "a graceful stop");
        boolean refused;
        try {
          get(base + "alive");
          refused = false;
        } catch (IOException e) {
          refused = true;
        }
        assertTrue(refused, "the endpoints close with the node");
      } finally {
        if (node.isAlive()) {
          node.kill();
        }
      }
    } finally {
      Postgres.shared().dropDatabase(journal);
    }
  }

  /**
   * A journal database that goes away under a running node for longer than {@code dead-after}: the
   * node turns not ready and stays live (its plugins run and answer with failures; a restart would
   * not help), and once the database is back it applies what waited without a restart.
   */
  @Test
  void aNodeWhoseJournalDatabaseGoesAwayStaysLiveAndGoesOnOnceItIsBack() throws Exception {
    JournalDatabase journal = Postgres.shared().createDatabase("ledger_db_away_it");
    journal.installSchema();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("payments");
      broker.createTopic(topic, 2);
      int port = FreePorts.next();
      int management = FreePorts.next();
      List<String> args = new ArrayList<>(LedgerNode.commandLine(broker.bootstrapServers(), topic, "ledger", journal,
          port, List.of("127.0.0.1:" + port)));
      args.addAll(List.of("--management-port", Integer.toString(management)));
      // The plugins are checked every second; a plugin missing for 5 s would make the node stop itself.
      List<String> jvm = List.of("-Dfencepost.pipeline.stall-timeout=4s", "-Dfencepost.pipeline.dead-after=5s");
      String base = "http://127.0.0.1:" + management + "/";
      JvmProcess node = JvmProcess.start("db-away-node", jvm, Main.class.getName(), args,
          Path.of("target", "ledger-db-away-it.log"));
      try {
        node.awaitLine("READY", Duration.ofSeconds(120));
        produce(broker, topic, "before-", 100);
        await(base + "metrics", r -> applied(r.body(), topic, 2) == 100);
        await(base + "ready", r -> r.statusCode() == 200);

        Postgres.shared().cutOff(journal);
        long away = System.nanoTime();
        produce(broker, topic, "during-", 100);
        // Not ready once its partitions stalled (stall-timeout) or restarted and cannot recover.
        await(base + "ready", r -> r.statusCode() != 200
            && (r.body().contains("stalled") || r.body().contains("recovering")));
        while (System.nanoTime() - away < TimeUnit.SECONDS.toNanos(20)) {   // four times dead-after
          assertTrue(node.isAlive(), "the node keeps running while its database is away");
          HttpResponse<String> alive = get(base + "alive");
          assertEquals(200, alive.statusCode(), alive.body());
          Thread.sleep(500);
        }
        Postgres.shared().reopen(journal);
        await(base + "metrics", r -> applied(r.body(), topic, 2) == 200);
        assertEquals(200, await(base + "ready", r -> r.statusCode() == 200).statusCode());
        assertEquals(0, node.countLines("this node was not live"), "it never stopped itself");
      } finally {
        Postgres.shared().reopen(journal);
        node.kill();
      }
    } finally {
      Postgres.shared().dropDatabase(journal);
    }
  }

  /** The records the node applied on the topic's partitions, from its Prometheus page (-1: not all shown yet). */
  private static long applied(String metrics, String topic, int partitions) {
    long sum = 0;
    for (int p = 0; p < partitions; p++) {
      String prefix = "fencepost_records_applied_total{group=\"ledger\",partition=\"" + p + "\",topic=\""
          + topic + "\"} ";
      int at = metrics.indexOf(prefix);
      if (at < 0) {
        return -1;
      }
      int end = metrics.indexOf('\n', at);
      sum += (long) Double.parseDouble(metrics.substring(at + prefix.length(), end).trim());
    }
    return sum;
  }

  private static void produce(KafkaBroker broker, String topic, String prefix, int count) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    PaymentJson json = new PaymentJson();
    try (KafkaProducer<String, Payment> producer = new KafkaProducer<>(p, new StringSerializer(), json)) {
      for (int i = 0; i < count; i++) {
        producer.send(new ProducerRecord<>(topic, "m" + i % 7, new Payment(prefix + i, "m" + i % 7, 100)));
      }
      producer.flush();
    }
  }

  private HttpResponse<String> get(String url) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> await(String url, Predicate<HttpResponse<String>> ok) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    HttpResponse<String> last = null;
    while (System.nanoTime() < deadline) {
      try {
        last = get(url);
        if (ok.test(last)) {
          return last;
        }
      } catch (IOException e) {
        // not bound yet
      }
      Thread.sleep(250);
    }
    throw new AssertionError(url + " never answered as awaited; last: "
        + (last == null ? "no answer" : last.statusCode() + " " + last.body()));
  }
}
