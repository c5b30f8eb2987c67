package io.fencepost;

import java.time.Duration;

/** Waits in the integration tests: on a condition, polled, never on a fixed sleep. */
final class Await {

  /** A condition that may throw while it is checked. */
  interface Condition {
    boolean holds() throws Exception;
  }

  private Await() {
  }

  /** Returns once {@code condition} holds; fails naming {@code what} after {@code timeout}. */
  static void until(String what, Duration timeout, Condition condition) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.holds()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + timeout + ": " + what);
      }
      Thread.sleep(200);
    }
  }
}
