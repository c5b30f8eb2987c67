package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** The {@code status} table from a node's {@code /pipelines/<name>/partitions} answer, and its exit status. */
class StatusCommandTest {

  private static List<String> print(String json, int[] status) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    status[0] = StatusCommand.print(new ObjectMapper().readTree(json), new PrintStream(bytes, true,
        StandardCharsets.UTF_8));
    return bytes.toString(StandardCharsets.UTF_8).lines().toList();
  }

  @Test
  void everyPartitionOwnedAndRunningExitsZero() throws Exception {
    int[] status = new int[1];
    List<String> lines = print("[{\"topic\":\"payments\",\"partition\":0,\"owner\":\"pekko://l@127.0.0.1:2551\","
        + "\"nextOffset\":4812,\"lag\":0,\"applied\":4761,\"deadLettered\":2,\"halted\":false}]", status);
    assertEquals(0, status[0]);
    assertEquals(List.of(
        "TOPIC                    PARTITION  OWNER                                         NEXT-OFFSET      LAG    "
            + "APPLIED    DLT HALTED",
        "payments                         0  pekko://l@127.0.0.1:2551                             4812        0       "
            + "4761      2 no",
        "1 partition(s), 0 without owner or halted"), lines);
  }

  @Test
  void aPartitionWithoutOwnerOrHaltedExitsOne() throws Exception {
    int[] status = new int[1];
    List<String> lines = print("[{\"topic\":\"payments\",\"partition\":1,\"owner\":\"-\",\"nextOffset\":null,"
        + "\"lag\":null,\"applied\":0,\"deadLettered\":0,\"halted\":false},"
        + "{\"topic\":\"payments\",\"partition\":2,\"owner\":\"pekko://l@127.0.0.1:2552\",\"nextOffset\":7,"
        + "\"lag\":3,\"applied\":7,\"deadLettered\":0,\"halted\":true,\"haltedReason\":\"stored offset above log end\"}]",
        status);
    assertEquals(1, status[0]);
    assertEquals("payments                         1  - (no owner answered)                                   -        -"
        + "          0      0 no", lines.get(1));
    assertEquals("payments                         2  pekko://l@127.0.0.1:2552                                7        3"
        + "          7      0 HALTED: stored offset above log end", lines.get(2));
    assertEquals("2 partition(s), 2 without owner or halted", lines.get(3));
  }
}
