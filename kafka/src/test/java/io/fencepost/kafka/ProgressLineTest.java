package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.OptionalLong;

import io.fencepost.PartitionId;
import org.junit.jupiter.api.Test;

class ProgressLineTest {

  private static PartitionView view(int partition, long applied, long redelivered, long byKey, long dead,
      OptionalLong lag, String halted) {
    return new PartitionView(new PartitionId("g", "payments", partition), "node", OptionalLong.of(applied), lag,
        applied, byKey, redelivered, dead, 0, "", halted);
  }

  @Test
  void totalsAndCountsSinceThePreviousLineWhileThePartitionsStayTheSame() {
    ProgressLine line = new ProgressLine();
    assertEquals("[ledger] progress: 2 partitions here; applied 150, dropped 4 (3 redelivered, 1 by business key), "
            + "dead-lettered 1, lag 30 (most 20 at payments-1), halted 0",
        line.render("ledger", List.of(view(0, 100, 3, 0, 1, OptionalLong.of(10), ""),
            view(1, 50, 0, 1, 0, OptionalLong.of(20), ""))));
    assertEquals("[ledger] progress: 2 partitions here; applied 400 (+250), dropped 4 (+0) (3 redelivered, "
            + "1 by business key), dead-lettered 2 (+1), lag 0, lag unknown for 1, halted 1",
        line.render("ledger", List.of(view(0, 300, 3, 0, 1, OptionalLong.of(0), ""),
            view(1, 100, 0, 1, 1, OptionalLong.empty(), "journal-gap"))));
    assertEquals("[ledger] progress: 1 partition here; applied 300, dropped 3 (3 redelivered, 0 by business key), "
            + "dead-lettered 1, lag 0, halted 0",
        line.render("ledger", List.of(view(0, 300, 3, 0, 1, OptionalLong.of(0), ""))),
        "after a rebalance the counts since the last line are not comparable and are left out");
    PartitionView unanswered = new PartitionView(new PartitionId("g", "payments", 0), PartitionView.UNANSWERED, OptionalLong.empty(),
        OptionalLong.empty(), 0, 0, 0, 0, 0, "", "");
    assertEquals("[ledger] progress: 1 partition here; applied 0, dropped 0 (0 redelivered, 0 by business key), "
            + "dead-lettered 0, lag 0, lag unknown for 1, halted 0",
        line.render("ledger", List.of(unanswered)), "an actor that did not answer makes no negative counts");
  }
}
