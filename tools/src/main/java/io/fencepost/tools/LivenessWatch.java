package io.fencepost.tools;

import java.time.Duration;

import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineHealth;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stops {@code fencepost ledger} once its pipeline is not live ({@link PipelineHealth#live()}: a dead
 * or stuck consumer thread, or journal plugins silent for {@code dead-after}), so that the process
 * exits with {@link #EXIT_STATUS} and its supervisor starts it again: what a liveness probe does for
 * a node run without one. (A SIGTERM that comes first wins: the process then exits with 143.)
 */
final class LivenessWatch {

  /** {@code fencepost ledger}'s exit status after it stopped for not being live. */
  static final int EXIT_STATUS = 4;
  static final CoordinatedShutdown.Reason REASON = new CoordinatedShutdown.Reason() {
    @Override
    public String toString() {
      return "NotLive";
    }
  };
  private static final Logger log = LoggerFactory.getLogger(LivenessWatch.class);
  private static final Duration EVERY = Duration.ofSeconds(1);

  private volatile String lastReason = "";

  private LivenessWatch() {
  }

  static LivenessWatch start(Pipeline pipeline, ActorSystem<?> system) {
    LivenessWatch watch = new LivenessWatch();
    system.scheduler().scheduleWithFixedDelay(EVERY, EVERY, () -> watch.check(pipeline, system),
        system.executionContext());
    return watch;
  }

  private void check(Pipeline pipeline, ActorSystem<?> system) {
    if (!lastReason.isEmpty()) {
      return;
    }
    PipelineHealth health;
    try {
      health = pipeline.health();
    } catch (RuntimeException | Error e) {   // a thrown Error would end the schedule silently
      log.warn("the pipeline's health could not be computed: {}", e.toString());
      return;
    }
    if (!health.live()) {
      lastReason = health.reason();
      log.error("this node is not live and stops (exit status {}) for its supervisor to start it again: {}",
          EXIT_STATUS, health.reason());
      CoordinatedShutdown.get(system).run(REASON);
    }
  }

  String lastReason() {
    return lastReason;
  }
}
