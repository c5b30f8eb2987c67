package io.fencepost.kafka;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/** The pipelines running on one actor system (until their stop completed), for health checks. */
final class RunningPipelines implements Extension {

  private static final ExtensionId<RunningPipelines> ID = new ExtensionId<>() {
    @Override
    public RunningPipelines createExtension(ActorSystem<?> system) {
      return new RunningPipelines();
    }
  };

  private final List<Pipeline> pipelines = new CopyOnWriteArrayList<>();

  static RunningPipelines get(ActorSystem<?> system) {
    return ID.apply(system);
  }

  void add(Pipeline pipeline) {
    pipelines.add(pipeline);
  }

  void remove(Pipeline pipeline) {
    pipelines.remove(pipeline);
  }

  List<Pipeline> all() {
    return List.copyOf(pipelines);
  }
}
