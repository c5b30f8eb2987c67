package io.fencepost;

/**
 * A call to a system outside the journal (a payment provider, an HTTP API), made by the framework
 * for a handler that returned {@link Effects#call}. It runs on Pekko's blocking I/O dispatcher,
 * never on the actor's thread, and may block.
 *
 * <p>It receives the record's stable idempotency key (its business key, else
 * {@code group-topic-partition-offset}) and must pass it to the provider: the call is made again
 * with the same key when the process crashes after the call but before its outcome is journaled.
 */
@FunctionalInterface
public interface ExternalCall {

  /**
   * Makes the call and returns its outcome as text (e.g. a charge id or a JSON document); the
   * outcome is journaled and handed to the handler's continuation. A
   * {@link io.fencepost.errors.RetriableException} makes the batch retry (with the same key); any
   * other exception dead-letters the record.
   */
  String call(String idempotencyKey) throws Exception;
}
