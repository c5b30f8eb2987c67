package com.example.pageviews;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;

import io.fencepost.testkit.PartitionActorTestKit;
import org.junit.jupiter.api.Test;

class PageViewCounterTest {

  @Test
  void eachViewCountsOnceWhateverIsRedeliveredOrReSent() {
    try (PartitionActorTestKit<String, PageViews, Viewed> kit = PartitionActorTestKit.create(PageViewCounter::new)) {
      kit.apply(List.of(kit.record("/home", Map.of("view-id", "v1"))));
      kit.apply(List.of(kit.record("/home", Map.of("view-id", "v2"))));
      kit.crash();
      kit.redeliver(0);
      PartitionActorTestKit.Result<PageViews, Viewed> resent =
          kit.apply(List.of(kit.record("/home", Map.of("view-id", "v1"))));

      assertEquals(1, resent.droppedByKey());
      assertEquals(2, kit.state().of("/home"));
      assertEquals(List.of(new Viewed("/home"), new Viewed("/home")), kit.events());
    }
  }
}
