package io.fencepost.errors;

/** A failure that may go away when tried again: a journal outage, a timeout, a busy provider. */
public class RetriableException extends FencepostException {

  public RetriableException(String message) {
    super(message, null);
  }

  public RetriableException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public final boolean isRetriable() {
    return true;
  }
}
