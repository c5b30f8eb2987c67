package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.OptionalLong;

import io.fencepost.BatchOutcome;
import io.fencepost.PartitionId;
import org.junit.jupiter.api.Test;

class ProgressLineTest {

  private static PartitionView view(int partition, long applied, OptionalLong lag, String halted) {
    return new PartitionView(new PartitionId("g", "payments", partition), "node", OptionalLong.of(applied), lag,
        applied, 0, 0, 0, 0, "", halted);
  }

  private static BatchOutcome.Applied batch(int applied, int redelivered, int byKey, int dead) {
    return new BatchOutcome.Applied(new PartitionId("g", "payments", 0), 0, applied, redelivered, byKey, true, dead, 0);
  }

  @Test
  void thisNodesTotalsSurviveRebalancesAndAlwaysShowTheirIncrease() {
    ProgressLine line = new ProgressLine();
    NodeTotals totals = new NodeTotals();
    totals.record(batch(100, 3, 0, 1));
    totals.record(batch(50, 0, 1, 0));
    assertEquals("[ledger] progress: 2 partitions here; this node applied 150 (+150), dropped 4 (+4) (3 redelivered, "
            + "1 by business key), dead-lettered 1 (+1); its partitions: applied 150 in all, lag 30 (most 20 at "
            + "payments-1), halted 0",
        line.render("ledger", totals.counts(), List.of(view(0, 100, OptionalLong.of(10), ""),
            view(1, 50, OptionalLong.of(20), ""))));
    totals.record(batch(250, 0, 0, 1));
    assertEquals("[ledger] progress: 2 partitions here; this node applied 400 (+250), dropped 4 (+0) (3 redelivered, "
            + "1 by business key), dead-lettered 2 (+1); its partitions: applied 400 in all, lag 0, lag unknown for 1, "
            + "halted 1",
        line.render("ledger", totals.counts(), List.of(view(0, 300, OptionalLong.of(0), ""),
            view(1, 100, OptionalLong.empty(), "journal-gap"))));
    // A rebalance: partition 1 moved away, partition 2 (applied 5,000 by its former owner) came.
    totals.record(batch(10, 0, 0, 0));
    assertEquals("[ledger] progress: 2 partitions here; this node applied 410 (+10), dropped 4 (+0) (3 redelivered, "
            + "1 by business key), dead-lettered 2 (+0); its partitions: applied 5310 in all, lag 0, halted 0",
        line.render("ledger", totals.counts(), List.of(view(0, 310, OptionalLong.of(0), ""),
            view(2, 5000, OptionalLong.of(0), ""))), "the node's totals go on; the partitions' are their own");
    PartitionView unanswered = new PartitionView(new PartitionId("g", "payments", 0), PartitionView.UNANSWERED,
        OptionalLong.empty(), OptionalLong.empty(), 0, 0, 0, 0, 0, "", "");
    assertEquals("[ledger] progress: 1 partition here; this node applied 410 (+0), dropped 4 (+0) (3 redelivered, "
            + "1 by business key), dead-lettered 2 (+0); its partitions: applied 0 in all, lag 0, lag unknown for 1, "
            + "halted 0",
        line.render("ledger", totals.counts(), List.of(unanswered)), "an actor that did not answer changes no total");
  }
}
