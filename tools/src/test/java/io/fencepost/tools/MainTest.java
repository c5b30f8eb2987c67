package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import io.fencepost.embedded.FreePorts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** How the command line ends when a command fails. */
class MainTest {

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void aNodeRefusedForItsSettingsEndsWithExitCode2TheKeyNamedAndNoThreadLeft() throws Exception {
    System.setProperty("pekko.kafka.producer.kafka-clients.enable.idempotence", "false");
    ConfigFactory.invalidateCaches();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code;
    try {
      code = Main.runReporting(new String[] {"ledger", "--bootstrap", "127.0.0.1:1", "--outbox-topic", "credits",
          "--jdbc-url", "jdbc:h2:mem:main-test;DATABASE_TO_UPPER=false;DB_CLOSE_DELAY=-1", "--install-schema", "--port", String.valueOf(FreePorts.next())},
          new PrintStream(err, true, StandardCharsets.UTF_8));
    } finally {
      System.clearProperty("pekko.kafka.producer.kafka-clients.enable.idempotence");
      ConfigFactory.invalidateCaches();
    }
    List<String> lines = err.toString(StandardCharsets.UTF_8).lines().toList();
    assertEquals(2, code, "1 means missing or doubled effects; a refused setting is 2");
    assertEquals(1, lines.size(), "one line, no stack trace: " + lines);
    assertTrue(lines.get(0).endsWith("(--verbose prints the stack trace)"), lines.get(0));
    assertTrue(lines.get(0).startsWith("fencepost ledger: pekko.kafka.producer.kafka-clients.enable.idempotence "
        + "must be true: without idempotence a retried send is stored twice"), lines.get(0));
    // The node's actor system was terminated: a process that failed to start must be able to end.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (ledgerThreads() > 0) {
      assertTrue(System.nanoTime() < deadline, ledgerThreads() + " threads of the ledger's actor system still run");
      Thread.sleep(50);
    }
  }

  private static long ledgerThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith("fencepost-ledger")).count();
  }

  @Test
  void aFailureWrappedInLayersIsOneLineWithEachCauseSaidOnce() {
    Exception e = new IllegalStateException("cannot read the journal of [p-0]",
        new java.util.concurrent.CompletionException(new java.sql.SQLException("Connection refused")));
    assertEquals("cannot read the journal of [p-0]: java.sql.SQLException: Connection refused", Main.oneLine(e),
        "the wrapper's message repeats its cause's: said once");
    assertEquals("java.lang.NullPointerException", Main.oneLine(new NullPointerException()));
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    assertEquals(2, Main.runReporting(new String[] {"verify", "--verbose", "--no-such-flag"},
        new PrintStream(err, true, StandardCharsets.UTF_8)), "a bad flag, --verbose taken by any command");
  }
}
