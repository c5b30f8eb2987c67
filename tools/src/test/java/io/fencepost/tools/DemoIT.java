package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The README's demo, at reduced size: broker, H2 journal, two node processes, a SIGKILL, the verdict. */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class DemoIT {

  @Test
  void demoKillsANodeMidStreamAndTheVerdictIsExactlyOnce() throws Exception {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    PrintStream original = System.out;
    int exit;
    System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      exit = Main.run(new String[] {"demo", "--count", "4000", "--rate", "800", "--dir", "target/demo-it"});
    } finally {
      System.setOut(original);
    }
    String out = captured.toString(StandardCharsets.UTF_8);
    System.out.println(out);

    assertEquals(0, exit, "demo exit code");
    assertTrue(out.contains("guarantee: exactly-once; hop 1: business-key window"), "guarantee statement printed");
    assertTrue(out.contains("node-b SIGKILLed mid-stream after 1,600 payments"), "a node was killed mid-stream");
    assertTrue(Pattern.compile("balance of merchant-\\d+ read through node-a, which does not own its partition \\d+: "
        + "[\\d,]+ cents \\(answered by pekko://fencepost-ledger@127\\.0\\.0\\.1:\\d+ from next offset [\\d,]+\\)")
        .matcher(out).find(), "a balance read across the cluster: " + out);
    Matcher sent = Pattern.compile("sent 4,000 payments \\+ ([0-9,]+) producer duplicates").matcher(out);
    assertTrue(sent.find(), "producer summary printed");
    String dups = sent.group(1);
    assertTrue(Integer.parseInt(dups.replace(",", "")) > 0, "some producer duplicates were sent");
    assertTrue(out.contains("VERDICT OK: 4,000 distinct keys expected, 4,000 applied, 0 missing, 0 doubled, "
        + dups + " producer duplicates"), "verdict matches the generator's own count");
    assertTrue(out.contains("dropped by business key (journaled): " + dups + ";"),
        "every producer duplicate was dropped by its business key");
    assertTrue(out.contains("read model ledger_balances (kept exactly once by a projection): 50 merchants, 4,000 payments"),
        "the SQL read model counts each payment once");
  }
}
