package io.fencepost.internal.writepath;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.fencepost.Effects;
import io.fencepost.ExternalCall;
import io.fencepost.Inbound;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.errors.FencepostException;
import io.fencepost.errors.HandlerFailedException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.slf4j.Logger;

/**
 * A partition actor's external calls ({@link Effects#call}): at most one in flight, made on Pekko's
 * blocking dispatcher, its outcome sent back to the actor ({@link SelfMessages#callDone}). While one
 * is in flight the actor stashes batches; a failed call's error waits, by idempotency key, for the
 * batch that asked for it. Used on the actor's thread only.
 */
public final class ExternalCalls {

  private static final String CALL_TIMEOUT_KEY = PartitionActorSettings.CONFIG_PATH + ".external-call.timeout";

  private final ActorSystem<?> system;
  private final SelfMessages self;
  private final Logger log;
  private final PartitionId partition;
  private final PartitionActorSettings settings;
  // The call in flight (its id), or null.
  private String inFlight;
  // Calls that failed, by idempotency key.
  private final Map<String, Throwable> failed = new HashMap<>();

  public ExternalCalls(ActorSystem<?> system, SelfMessages self, Logger log, PartitionId partition,
      PartitionActorSettings settings) {
    this.system = system;
    this.self = self;
    this.log = log;
    this.partition = partition;
    this.settings = settings;
  }

  /** Whether a call is in flight: batches wait in the stash meanwhile. */
  public boolean inFlight() {
    return inFlight != null;
  }

  /** The actor restarted: a call in flight is abandoned (its batch is resent and asks again), failures forgotten. */
  public void reset() {
    inFlight = null;
    failed.clear();
  }

  /**
   * The failure of the call made for {@code key}, removed (null when it did not fail), as the error the
   * record's batch is rejected with: retriable for I/O errors and timeouts.
   */
  FencepostException takeFailure(Inbound<?> record, String key) {
    Throwable failure = failed.remove(key);
    if (failure == null) {
      return null;
    }
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    boolean retriable = cause instanceof FencepostException fe ? fe.isRetriable()
        : cause instanceof IOException || cause instanceof TimeoutException;
    String message = cause instanceof TimeoutException
        ? "external call took longer than " + CALL_TIMEOUT_KEY + " [" + settings.callTimeout() + "]"
        : "external call failed: " + cause.getMessage();
    return new HandlerFailedException(partition.qualifiedName(), record.offset(), retriable, cause.getClass().getName(),
        message, cause);
  }

  /** Runs {@code call} for the record on the blocking dispatcher; its outcome comes back to the actor. */
  void start(Inbound<?> record, String key, ExternalCall call) {
    String callId = UUID.randomUUID().toString();
    inFlight = callId;
    long offset = record.offset();
    Executor blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    CompletableFuture<String> result = CompletableFuture.supplyAsync(() -> {
      try {
        return Objects.requireNonNull(call.call(key), "the external call returned null; return an outcome text");
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new CompletionException(e);
      }
    }, blocking).orTimeout(settings.callTimeout().toMillis(), TimeUnit.MILLISECONDS);
    log.debug("[{}] offset [{}]: external call with idempotency key [{}]", partition.shortName(), offset,
        key);
    self.callDone(result, callId, offset, key);
  }

  /**
   * A call finished: false when it is not the call in flight (abandoned by a restart: ignore it).
   * A failure is kept for the batch that asked for it.
   */
  public boolean done(String callId, String key, Throwable failure) {
    if (!callId.equals(inFlight)) {
      return false;
    }
    inFlight = null;
    if (failure != null) {
      failed.put(key, failure);
    }
    return true;
  }
}
