package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fencepost.examples.LedgerNode;
import io.fencepost.examples.Payment;
import io.fencepost.examples.PaymentJson;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import io.fencepost.jdbc.JournalDatabase;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Three ledger nodes in their own processes answer {@code GET /queries/balances/{merchant}} from any node:
 * every balance read through a node that owns none of the merchant's partition equals what was
 * paid; a read bounded by a just-produced payment's offset includes it; while the owner of some
 * partitions is SIGKILLed, a client reading with the last offsets it saw as bounds gets answers or
 * "moving" within the query timeout, never a state older than one it saw.
 */
@Tag("integration")
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class LedgerQueriesIT {

  private static final int PARTITIONS = 6;
  private static final int MERCHANTS = 24;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void anyNodeAnswersEveryBalanceAndASessionNeverGoesBackWhileAnOwnerDies() throws Exception {
    JournalDatabase journal = Postgres.shared().createDatabase("ledger_queries_it");
    journal.installSchema();
    List<JvmProcess> nodes = new ArrayList<>();
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("payments");
      broker.createTopic(topic, PARTITIONS);
      List<Integer> ports = List.of(FreePorts.next(), FreePorts.next(), FreePorts.next());
      List<Integer> management = List.of(FreePorts.next(), FreePorts.next(), FreePorts.next());
      List<String> seeds = ports.stream().map(p -> "127.0.0.1:" + p).toList();
      for (int i = 0; i < 3; i++) {
        List<String> args = new ArrayList<>(LedgerNode.commandLine(broker.bootstrapServers(), topic, "ledger", journal,
            ports.get(i), seeds));
        args.addAll(List.of("--management-port", Integer.toString(management.get(i))));
        nodes.add(JvmProcess.start("query-node-" + i, Main.class.getName(), args,
            Path.of("target", "ledger-queries-it-" + i + ".log")));
      }
      for (JvmProcess n : nodes) {
        n.awaitLine("READY", Duration.ofSeconds(120));
      }
      for (int m : management) {
        awaitReady("http://127.0.0.1:" + m + "/ready");
      }

      // 1200 payments over 24 merchants, 60 of them sent twice (dropped by their business key).
      Map<String, Long> paid = new TreeMap<>();
      try (KafkaProducer<String, byte[]> producer = producer(broker)) {
        Random random = new Random(7);
        for (int i = 0; i < 1200; i++) {
          Payment p = new Payment("pay-" + i, "merchant-" + random.nextInt(MERCHANTS), 1 + random.nextInt(10_000));
          paid.merge(p.merchantId(), p.amountCents(), Long::sum);
          send(producer, topic, p);
          if (i % 20 == 0) {
            send(producer, topic, p);
          }
        }
        producer.flush();
      }

      // Every balance, read through a node that does not own the merchant's partition.
      for (Map.Entry<String, Long> e : paid.entrySet()) {
        JsonNode answer = null;
        for (int attempt = 0; attempt < 600 && answer == null; attempt++) {
          for (int m : management) {
            JsonNode a = balance(m, e.getKey(), null);
            if (a != null && !a.get("local").asBoolean() && a.get("reply").asLong() == e.getValue()) {
              answer = a;
              break;
            }
          }
          if (answer == null) {
            Thread.sleep(100);   // until the ledger applied every payment of the merchant
          }
        }
        assertTrue(answer != null, e.getKey() + " was never answered " + e.getValue() + " by a node that does not "
            + "own its partition; last answers: " + answers(management, e.getKey()));
        assertFalse(answer.get("local").asBoolean());
      }

      // The cluster view, from every node: the same owner for each partition, nothing behind.
      Map<Integer, String> owners = partitionOwners(management.get(0), 0);
      assertEquals(PARTITIONS, owners.size(), owners.toString());
      for (int m : management) {
        assertEquals(owners, partitionOwners(m, 0), "the cluster view from " + m);
      }

      // Read your writes: a payment's own offset as the bound, read at once through a non-owner.
      String merchant = "merchant-3";
      long before = paid.get(merchant);
      RecordMetadata written;
      try (KafkaProducer<String, byte[]> producer = producer(broker)) {
        written = send(producer, topic, new Payment("pay-ryw", merchant, 777)).get(30, TimeUnit.SECONDS);
      }
      JsonNode own = null;
      for (int m : management) {
        JsonNode a = balance(m, merchant, written.partition() + ":" + written.offset());
        if (a != null && !a.get("local").asBoolean()) {
          own = a;
          break;
        }
      }
      assertTrue(own != null, "no node that does not own " + merchant + " answered: " + answers(management, merchant));
      assertEquals(before + 777, own.get("reply").asLong(), own.toString());
      assertTrue(own.get("appliedNextOffset").asLong() > written.offset(), own.toString());
      paid.merge(merchant, 777L, Long::sum);

      // A session through node 0 while another node, owner of some partitions, is SIGKILLed.
      int victim = victimOwningAPartition(management);
      int via = victim == 0 ? 1 : 0;
      String victimAddress = nodeAddress(management.get(victim));
      Map<Integer, Long> seen = new ConcurrentHashMap<>();
      Map<Integer, String> answeredBy = new ConcurrentHashMap<>();
      int[] moved = new int[1];   // answers from another node than the partition's previous answer
      List<String> violations = new ArrayList<>();
      int[] outcomes = new int[3];   // answered, moving, other
      AtomicBoolean stop = new AtomicBoolean();
      Map<String, Integer> partitionOf = new HashMap<>();   // a key's partition does not change
      for (int i = 0; i < MERCHANTS; i++) {
        partitionOf.put("merchant-" + i, partitionOf(management.get(via), "merchant-" + i));
      }
      Thread reader = new Thread(() -> {
        int i = 0;
        while (!stop.get()) {
          String m = "merchant-" + (i++ % MERCHANTS);
          try {
            int partition = partitionOf.get(m);
            Long last = seen.get(partition);
            long started = System.nanoTime();
            HttpResponse<String> r = get(balanceUrl(management.get(via), m,
                last == null || last == 0 ? null : partition + ":" + (last - 1)));
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            if (r.statusCode() == 200) {
              JsonNode answer = JSON.readTree(r.body());
              long next = answer.get("appliedNextOffset").asLong();
              String previous = answeredBy.put(partition, answer.get("node").asText());
              if (previous != null && !previous.equals(answer.get("node").asText())) {
                moved[0]++;
              }
              if (last != null && next < last) {
                violations.add(m + " answered from next offset " + next + " after " + last + " was seen");
              }
              seen.merge(partition, next, Math::max);
              outcomes[0]++;
            } else if (r.statusCode() == 503 && r.body().contains("partition is moving")) {
              outcomes[1]++;
            } else {
              outcomes[2]++;
              violations.add(m + ": " + r.statusCode() + " " + r.body());
            }
            if (tookMillis > 7_000) {
              violations.add(m + " took " + tookMillis + " ms (query timeout 5 s)");
            }
          } catch (Exception e) {
            violations.add(m + ": " + e);
          }
        }
      });
      reader.start();
      Thread.sleep(2_000);
      nodes.get(victim).kill();
      // Until every partition answers again through the survivors.
      for (Map.Entry<String, Long> e : paid.entrySet()) {
        JsonNode a = null;
        for (int attempt = 0; attempt < 600 && (a == null || a.get("reply").asLong() != e.getValue()); attempt++) {
          a = balance(management.get(via), e.getKey(), null);
          if (a == null || a.get("reply").asLong() != e.getValue()) {
            Thread.sleep(100);
          }
        }
        assertEquals(e.getValue(), a == null ? null : a.get("reply").asLong(), e.getKey() + " after the kill");
      }
      // The cluster view once the survivors report every partition (each answering its status).
      String view = "";
      for (int i = 0; i < 600; i++) {
        view = get("http://127.0.0.1:" + management.get(via) + "/pipelines/ledger/partitions").body();
        JsonNode parts = JSON.readTree(view);
        boolean settled = parts.size() == PARTITIONS;
        for (JsonNode p : parts) {
          settled &= p.get("owner").asText().startsWith("pekko://") && !p.get("owner").asText().equals(victimAddress);
        }
        if (settled) {
          break;
        }
        Thread.sleep(100);
      }
      Map<Integer, String> after = partitionOwners(management.get(via), -1);
      assertEquals(PARTITIONS, after.size(), view);
      assertFalse(after.containsValue(victimAddress), "owned by the killed node: " + view);
      Thread.sleep(1_000);
      stop.set(true);
      reader.join(30_000);
      assertEquals(List.of(), violations);
      System.out.printf("session during the kill: %d answered, %d moving, %d other; %d answers from a new owner%n",
          outcomes[0], outcomes[1], outcomes[2], moved[0]);
      assertTrue(moved[0] > 0, "the session read a partition before and after it moved: " + moved[0]);
    } finally {
      for (JvmProcess n : nodes) {
        if (n.isAlive()) {
          n.kill();
        }
      }
      Postgres.shared().dropDatabase(journal);
    }
  }

  /**
   * {@code GET /pipelines/ledger/partitions} of a node: each partition's owner; every partition owned
   * (not "-") and, when {@code lag} is not negative, at that lag.
   */
  private Map<Integer, String> partitionOwners(int management, long lag) throws Exception {
    HttpResponse<String> r = get("http://127.0.0.1:" + management + "/pipelines/ledger/partitions");
    assertEquals(200, r.statusCode(), r.body());
    Map<Integer, String> owners = new TreeMap<>();
    for (JsonNode p : JSON.readTree(r.body())) {
      assertTrue(p.get("owner").asText().startsWith("pekko://"), "owned: " + p);
      assertFalse(p.get("halted").asBoolean(), p.toString());
      if (lag >= 0) {
        assertEquals(lag, p.get("lag").asLong(), p.toString());
      }
      owners.put(p.get("partition").asInt(), p.get("owner").asText());
    }
    return owners;
  }

  /** A node (by index) that owns at least one partition, found by asking node 0 for every merchant. */
  private int victimOwningAPartition(List<Integer> management) throws Exception {
    Map<String, Integer> byNode = new HashMap<>();
    for (int i = 0; i < 3; i++) {
      byNode.put(nodeAddress(management.get(i)), i);
    }
    for (int i = 0; i < MERCHANTS; i++) {
      JsonNode a = balance(management.get(0), "merchant-" + i, null);
      if (a != null && !a.get("local").asBoolean()) {
        Integer owner = byNode.get(a.get("node").asText());
        if (owner != null) {
          return owner;
        }
      }
    }
    throw new AssertionError("node 0 owns every merchant's partition");
  }

  /** A node's own address, read from the answer for a merchant it owns. */
  private String nodeAddress(int management) throws Exception {
    for (int i = 0; i < MERCHANTS; i++) {
      JsonNode a = balance(management, "merchant-" + i, null);
      if (a != null && a.get("local").asBoolean()) {
        return a.get("node").asText();
      }
    }
    return "none:" + management;
  }

  private int partitionOf(int management, String merchant) throws Exception {
    HttpResponse<String> r = get(balanceUrl(management, merchant, null));
    if (r.statusCode() == 200) {
      return JSON.readTree(r.body()).get("partition").asInt();
    }
    // The partition is named in the error too ("[ledger|topic|p] ...").
    String body = r.body();
    int end = body.indexOf(']');
    return Integer.parseInt(body.substring(body.lastIndexOf('|', end) + 1, end));
  }

  private static KafkaProducer<String, byte[]> producer(KafkaBroker broker) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    return new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer());
  }

  private static java.util.concurrent.Future<RecordMetadata> send(KafkaProducer<String, byte[]> producer, String topic,
      Payment p) {
    return producer.send(new ProducerRecord<>(topic, p.merchantId(), new PaymentJson().serialize(topic, p)));
  }

  private String answers(List<Integer> management, String merchant) throws Exception {
    StringBuilder b = new StringBuilder();
    for (int m : management) {
      b.append(get(balanceUrl(m, merchant, null)).body()).append(' ');
    }
    return b.toString();
  }

  /** The answer for the merchant through the node at {@code management}; null unless 200. */
  private JsonNode balance(int management, String merchant, String after) throws Exception {
    HttpResponse<String> r = get(balanceUrl(management, merchant, after));
    return r.statusCode() == 200 ? JSON.readTree(r.body()) : null;
  }

  private static String balanceUrl(int management, String merchant, String after) {
    return "http://127.0.0.1:" + management + "/queries/balances/"
        + URLEncoder.encode(merchant, StandardCharsets.UTF_8)
        + (after == null ? "" : "?after=" + after);
  }

  private void awaitReady(String url) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (System.nanoTime() < deadline) {
      try {
        if (get(url).statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not bound yet
      }
      Thread.sleep(200);
    }
    throw new AssertionError(url + " never ready");
  }

  private HttpResponse<String> get(String url) throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
