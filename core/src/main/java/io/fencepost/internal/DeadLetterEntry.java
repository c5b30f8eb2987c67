package io.fencepost.internal;

/** A dead letter as journaled in a {@link BatchEvent}: the offset moved past it in the same write. */
public record DeadLetterEntry(long offset, String key, String errorClass, String errorMessage, int attempts) {

  public DeadLetterEntry {
    key = key == null ? "" : key;
    errorMessage = errorMessage == null ? "" : errorMessage;
  }
}
