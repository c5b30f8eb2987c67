package io.fencepost.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the benchmark's quick mode in-process (every peer once on a small topic, on a real broker and
 * PostgreSQL) and checks exact counts: in a run without crashes every peer, whatever its promise,
 * applies each record exactly once.
 */
class SideBySideQuickIT {

  @Test
  @Timeout(value = 110, unit = TimeUnit.SECONDS)
  void everyPeerAppliesEveryRecordExactlyOnceInACleanRun() throws Exception {
    List<PeerResult> results = SideBySide.quick(System.out);

    assertEquals(List.of("raw", "connectors-alo", "naive-inbox-1", "naive-inbox-100", "kstreams-eos", "fencepost-eo",
        "fencepost-alo", "fencepost-amo"), results.stream().map(r -> r.peer().name()).toList());
    for (PeerResult r : results) {
      String peer = r.peer().name();
      assertEquals(1, r.throughput().runs().size(), peer);
      Outcome o = r.throughput().median();
      assertTrue(r.keptPromise(), peer + " broke its " + r.peer().promise().label() + " promise: " + o);
      assertEquals(0, o.losses(), peer + " lost effects: " + o);
      assertEquals(0, o.duplicates(), peer + " doubled effects: " + o);
      assertEquals(o.records(), o.applied(), peer + " applied a different number of effects: " + o);
      int expected = r.peer() instanceof NaiveInboxPeer inbox ? inbox.records(new Workload(Plan.quick().records(),
          Plan.quick().recordBytes())) : Plan.quick().records();
      assertEquals(expected, o.records(), peer + " applied a different number of records than planned");
    }
  }
}
