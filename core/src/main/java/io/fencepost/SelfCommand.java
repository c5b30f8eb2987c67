package io.fencepost;

import java.util.List;

import io.fencepost.internal.WindowImage;
import io.fencepost.internal.WindowSegment;

/** The messages a partition actor sends itself; never sent by a pipeline, never sent remotely. */
sealed interface SelfCommand extends PartitionCommand permits SelfCommand.RunAccepted, SelfCommand.CallDone,
    SelfCommand.FlushEffects, SelfCommand.WindowRead {

  /** At-most-once's second step: running handlers after the offset was written. */
  record RunAccepted(List<Inbound<?>> records) implements SelfCommand {
  }

  /** At-most-once: write the waiting effects named {@code generation} unless a batch's write carried them. */
  record FlushEffects(long generation) implements SelfCommand {
  }

  /** The key window segments {@code image} refers to were read (or {@code failure}). */
  record WindowRead(WindowImage image, List<WindowSegment> segments,
      Throwable failure, long startedNanos) implements SelfCommand {
  }

  /** An external call made for the record at {@code offset} finished. */
  record CallDone(String callId, long offset, String key, String outcome, Throwable failure)
      implements SelfCommand {
  }
}
