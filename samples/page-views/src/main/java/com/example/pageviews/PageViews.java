package com.example.pageviews;

import java.util.HashMap;
import java.util.Map;

import io.fencepost.JacksonSerializable;

/** The state of one partition: views per page. Immutable; stored in snapshots. */
public record PageViews(Map<String, Long> counts) implements JacksonSerializable {

  public static final PageViews EMPTY = new PageViews(Map.of());

  public PageViews {
    counts = Map.copyOf(counts);
  }

  public PageViews add(Viewed v) {
    Map<String, Long> next = new HashMap<>(counts);
    next.merge(v.page(), 1L, Long::sum);
    return new PageViews(next);
  }

  public long of(String page) {
    return counts.getOrDefault(page, 0L);
  }
}
