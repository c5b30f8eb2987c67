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

  /** Every command: 0 for its help, 2 and one line for a flag it does not take or a database it cannot reach. */
  @Test
  void everyCommandEndsWith0ForHelpAnd2WithOneLineForABadFlagOrAnUnreachableDatabase() {
    List<String[]> commands = List.of(new String[] {"broker"}, new String[] {"ledger"}, new String[] {"demo"},
        new String[] {"produce"}, new String[] {"verify"}, new String[] {"dlq", "replay"},
        new String[] {"offsets", "reset"}, new String[] {"journal", "move"}, new String[] {"journal", "adopt"},
        new String[] {"chaos"}, new String[] {"status"});
    for (String[] command : commands) {
      String name = String.join(" ", command);
      Ended help = call(with(command, "--help"));
      assertEquals(0, help.code(), name + " --help: " + help.err());
      Ended bad = call(with(command, "--no-such-flag"));
      assertEquals(2, bad.code(), name + " --no-such-flag: " + bad.err());
      assertEquals(1, bad.err().size(), name + ": one line: " + bad.err());
      assertTrue(bad.err().get(0).contains("unknown flag [--no-such-flag]"), name + ": the flag named: " + bad.err());
    }
    Ended away = call("journal", "adopt", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x");
    assertEquals(2, away.code(), away.err().toString());
    assertEquals(1, away.err().size(), "one line: " + away.err());
    assertTrue(away.err().get(0).startsWith("fencepost journal failed: ") && away.err().get(0).contains("Connection")
        && away.err().get(0).endsWith("(--verbose prints the stack trace)"), away.err().get(0));
  }

  private record Ended(int code, List<String> err) {
  }

  /** Runs a command line as {@code main} does, with what it prints on standard error (its output dropped). */
  private static Ended call(String... args) {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
    PrintStream out = System.out;
    PrintStream previousErr = System.err;
    System.setOut(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
    System.setErr(errStream);
    try {
      int code = Main.runReporting(args, errStream);
      return new Ended(code, err.toString(StandardCharsets.UTF_8).lines().toList());
    } finally {
      System.setOut(out);
      System.setErr(previousErr);
    }
  }

  private static String[] with(String[] command, String flag) {
    String[] args = java.util.Arrays.copyOf(command, command.length + 1);
    args[command.length] = flag;
    return args;
  }
}
