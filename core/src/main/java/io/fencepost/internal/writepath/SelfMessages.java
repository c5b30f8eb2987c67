package io.fencepost.internal.writepath;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;

import io.fencepost.Inbound;
import io.fencepost.internal.WindowImage;
import io.fencepost.internal.WindowSegment;

/** The messages the write path has its partition actor send itself (the actor's own command types). */
public interface SelfMessages {

  /** At-most-once's second step: run the handlers of {@code records}, whose offset write is durable. */
  void runAccepted(List<Inbound<?>> records);

  /** At-most-once: write the waiting effects named {@code generation} after {@code delay}, unless a batch carried them. */
  void flushEffects(Duration delay, long generation);

  /** Stop this incarnation (queued behind the commands already in the mailbox). */
  void stop();

  /** The external call {@code callId} for the record at {@code offset} ends with {@code result}. */
  void callDone(CompletionStage<String> result, String callId, long offset, String key);

  /** The key window segments {@code image} refers to are being read (since {@code startedNanos}). */
  void windowRead(WindowImage image,
      CompletionStage<List<WindowSegment>> read, long startedNanos);
}
