package io.fencepost.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the exactly-once-to-another-topic comparison at its quick size in-process (a real broker and
 * PostgreSQL) and checks exact counts as a read_committed consumer of each output topic sees them,
 * and that each peer's footprint was sampled: the exactly-once relay committed transactions with one
 * transactional producer per partition, the at-least-once relay none.
 */
class OutboxComparisonQuickIT {

  @Test
  @Timeout(value = 110, unit = TimeUnit.SECONDS)
  void everyPeerMakesEveryRecordVisibleOnceInACleanRun() throws Exception {
    List<OutboxComparison.Result> results = OutboxComparison.quick(System.out);

    assertEquals(List.of("kstreams-eos", "fencepost-eo-relay", "fencepost-alo-relay"),
        results.stream().map(r -> r.peer().name()).toList());
    int records = OutboxComparison.Size.quick().records();
    for (OutboxComparison.Result r : results) {
      String peer = r.peer().name();
      Outcome o = r.throughput().median();
      assertTrue(r.keptPromise(), peer + " broke its promise: " + o);
      assertEquals(records, o.records(), peer);
      assertEquals(records, o.applied(), peer + " made a different number of inputs visible: " + o);
      assertEquals(0, o.duplicates(), peer + " copies: " + o);
      assertEquals(0, o.losses(), peer + " missing: " + o);
    }
    int partitions = OutboxComparison.Size.quick().partitions();
    Footprint eo = results.get(1).footprint();
    assertTrue(eo.transactions() >= partitions, "a transaction per partition at least: " + eo);
    assertTrue(eo.producers() >= partitions, "a transactional producer per partition: " + eo);
    assertEquals(0, results.get(2).footprint().transactions(), "the at-least-once relay runs no transaction");
  }
}
