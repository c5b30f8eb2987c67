package io.fencepost.errors;

/**
 * The root of Fencepost's exceptions. {@link RetriableException}s may succeed when tried again
 * (the framework retries them with backoff); {@link FatalException}s will not, and need a person.
 */
public abstract class FencepostException extends RuntimeException {

  protected FencepostException(String message, Throwable cause) {
    super(message, cause);
  }

  /** Whether trying again may succeed. */
  public abstract boolean isRetriable();
}
