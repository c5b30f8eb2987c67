package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import io.fencepost.reconciliation.ReconciliationReport;

/**
 * The CI-sized fault campaign: 3 node processes, 12 partitions, 100,000 payments with 1% producer
 * duplicates, 3 SIGKILLs, 1 zombie (SIGSTOP past the session timeout), 1 broker restart, 1 rebalance;
 * each credit announced through the exactly-once outbox relay. The reconciliation must agree exactly
 * with the generator's own counts, and a read_committed reader of the outbox topic must see each
 * announcement once.
 */
@Tag("integration")
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class ChaosCampaignIT {

  @Test
  void ciSizedCampaignLosesNothingAndDoublesNothing() throws Exception {
    ChaosCampaign.Plan plan = new ChaosCampaign.Plan(20261129, 3, 12, 100_000, 1_500, 0.01, 3, 1, 1, 1, 0, 1,
        Path.of("target", "chaos-it").toAbsolutePath(), Optional.of("exactly-once"));
    ChaosCampaign.Outcome outcome = new ChaosCampaign(plan, System.out).run();
    ReconciliationReport report = outcome.report();
    System.out.println(report.render());
    System.out.println(outcome.verdict());

    assertEquals(100_000, outcome.payments());
    assertTrue(outcome.producerDuplicates() > 500, "about 1% duplicates: " + outcome.producerDuplicates());
    assertEquals(100_000 + outcome.producerDuplicates(), report.total().records());
    assertEquals(100_000, report.total().expected());
    assertEquals(100_000, report.total().applied());
    assertEquals(0, report.total().missing());
    assertEquals(0, report.total().doubled());
    assertEquals(outcome.producerDuplicates(), report.total().producerDuplicates());
    assertEquals(outcome.producerDuplicates(), report.droppedByKey(), "every producer duplicate dropped by key");
    assertEquals(0, report.unexpectedEffects());
    assertEquals(3, outcome.faults().stream().filter(f -> f.contains("SIGKILL node")).count());
    assertEquals(1, outcome.faults().stream().filter(f -> f.contains("SIGSTOP node")).count());
    assertEquals(1, outcome.faults().stream().filter(f -> f.contains("broker restarted")).count());
    assertEquals(1, outcome.faults().stream().filter(f -> f.contains("node added")).count());
    assertEquals(0, outcome.ownership().anomalies(), "ownership anomalies: " + outcome.ownership().render());
    assertEquals(0, outcome.ownership().partitionRestarts(), "partitions restarted: " + outcome.ownership().render());
    ReconciliationReport.Outbox outbox = report.outbox().orElseThrow();
    assertEquals(100_000, outbox.expected(), "an announcement of every credit journaled: " + outbox.render());
    assertEquals(100_000, outbox.published(), "each published, read_committed: " + outbox.render());
    assertEquals(100_000, outbox.records(), "each once, read_committed: " + outbox.render());
    assertEquals(0, outbox.missing());
    assertEquals(0, outbox.copies());
    assertEquals(0, outbox.unknown(), "nothing the journal does not hold");
    assertTrue(outcome.passed(), outcome.verdict());
  }
}
