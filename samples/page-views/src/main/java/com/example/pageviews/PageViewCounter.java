package com.example.pageviews;

import java.util.Optional;

import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;

/**
 * Counts views per page. A record's value is the page; its {@code view-id} header is the business
 * key, so a view the producer sent twice counts once.
 */
public final class PageViewCounter extends PartitionActor<String, PageViews, Viewed> {

  public PageViewCounter(PartitionContext context) {
    super(context);
  }

  @Override
  protected PageViews emptyState() {
    return PageViews.EMPTY;
  }

  @Override
  protected Effects<Viewed> onRecord(PageViews state, Inbound<String> in) {
    return Effects.persist(new Viewed(in.value()));
  }

  @Override
  protected PageViews applyEvent(PageViews state, Viewed event) {
    return state.add(event);
  }

  @Override
  protected Optional<String> businessKey(Inbound<String> in) {
    return in.header("view-id");
  }
}
