package com.example.pageviews;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.fencepost.embedded.KafkaBroker;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The packaged jar, as it would be deployed: against a real broker and an H2 journal file. */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class PageViewServiceIT {

  private static final Pattern PROGRESS =
      Pattern.compile("\\[page-views\\] progress: .* applied (\\d+).* \\((\\d+) redelivered, (\\d+) by business key\\)");

  @Test
  void thePackagedServiceCountsEachViewOnce() throws Exception {
    Path dir = Files.createTempDirectory(Path.of("target"), "service-it");
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      broker.createTopic("page-views", 2);
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(props(broker.bootstrapServers()))) {
        for (int i = 0; i < 1000; i++) {
          send(producer, "v" + i, "/page/" + (i % 10));
        }
        for (int i = 0; i < 50; i++) {
          send(producer, "v" + i, "/page/" + (i % 10));   // re-sent by a producer above the client
        }
      }
      int port;
      try (ServerSocket s = new ServerSocket(0)) {
        port = s.getLocalPort();
      }
      ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Dfencepost.pipelines.page-views.progress-interval=1s", "-jar", "target/page-views.jar");
      pb.environment().put("KAFKA_BOOTSTRAP", broker.bootstrapServers());
      pb.environment().put("PORT", Integer.toString(port));
      pb.environment().put("JDBC_URL", "jdbc:h2:file:" + dir.toAbsolutePath().resolve("journal")
          + ";DATABASE_TO_UPPER=false;AUTO_SERVER=TRUE;WRITE_DELAY=0");
      pb.redirectErrorStream(true);
      Process service = pb.start();
      List<String> output = new CopyOnWriteArrayList<>();
      Thread reader = new Thread(() -> {
        try (BufferedReader r = new BufferedReader(
            new InputStreamReader(service.getInputStream(), StandardCharsets.UTF_8))) {
          for (String line = r.readLine(); line != null; line = r.readLine()) {
            output.add(line);
          }
        } catch (Exception e) {
          output.add("reader: " + e);
        }
      });
      reader.start();
      try {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        long[] last = null;
        while (System.nanoTime() < deadline && service.isAlive()) {
          last = lastProgress(output);
          if (last != null && last[0] + last[2] == 1050) {
            break;
          }
          Thread.sleep(200);
        }
        assertTrue(last != null, "no progress line; the service printed:\n" + String.join("\n", output));
        assertEquals(1000, last[0], "views applied; output:\n" + String.join("\n", output));
        assertEquals(50, last[2], "re-sent views dropped by their view-id");
      } finally {
        service.destroy();   // SIGTERM: a graceful stop
        boolean stopped = service.waitFor(60, TimeUnit.SECONDS);
        if (!stopped) {
          service.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        reader.join(10_000);
        assertTrue(stopped, "the service stops on SIGTERM");
      }
    }
  }

  private static long[] lastProgress(List<String> output) {
    for (int i = output.size() - 1; i >= 0; i--) {
      Matcher m = PROGRESS.matcher(output.get(i));
      if (m.find()) {
        return new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3))};
      }
    }
    return null;
  }

  private static void send(KafkaProducer<String, String> producer, String viewId, String page) throws Exception {
    ProducerRecord<String, String> r = new ProducerRecord<>("page-views", viewId, page);
    r.headers().add("view-id", viewId.getBytes(StandardCharsets.UTF_8));
    producer.send(r).get();
  }

  private static Properties props(String bootstrap) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    return p;
  }
}
