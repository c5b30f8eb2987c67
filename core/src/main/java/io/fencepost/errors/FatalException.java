package io.fencepost.errors;

/** A failure that trying again cannot fix: bad settings, a record the handler can never apply. */
public class FatalException extends FencepostException {

  public FatalException(String message) {
    super(message, null);
  }

  public FatalException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public final boolean isRetriable() {
    return false;
  }
}
