package io.fencepost.kafka;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A {@link Ticker} that stands still until a test moves it. */
final class ManualTicker implements Ticker {

  private final AtomicLong now;

  ManualTicker(long startNanos) {
    this.now = new AtomicLong(startNanos);
  }

  @Override
  public long nanoTime() {
    return now.get();
  }

  void advance(Duration by) {
    now.addAndGet(by.toNanos());
  }
}
