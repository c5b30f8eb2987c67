package io.fencepost.internal;

/**
 * A dead letter as journaled in a {@link BatchEvent}: the offset moved past it in the same write.
 * {@code parked}: it was parked behind an earlier failure of its key; {@code parksKey}: its key is
 * parked from now on (per-key ordering on, and it failed itself); {@code replayOf}: the offset of
 * the dead letter the record replayed, or -1 (see {@link ReplayLedger}).
 */
public record DeadLetterEntry(long offset, String key, String errorClass, String errorMessage, int attempts,
    boolean parked, boolean parksKey, long replayOf) {

  public DeadLetterEntry(long offset, String key, String errorClass, String errorMessage, int attempts) {
    this(offset, key, errorClass, errorMessage, attempts, false, false, -1);
  }

  public DeadLetterEntry(long offset, String key, String errorClass, String errorMessage, int attempts,
      boolean parked, boolean parksKey) {
    this(offset, key, errorClass, errorMessage, attempts, parked, parksKey, -1);
  }

  /** The longest error message journaled, in characters; a longer one is cut and ends in "...". */
  static final int MAX_MESSAGE = 4000;

  public DeadLetterEntry {
    key = key == null ? "" : key;
    errorMessage = errorMessage == null ? "" : errorMessage;
  }

  /** This entry with another error message. */
  DeadLetterEntry withMessage(String message) {
    return new DeadLetterEntry(offset, key, errorClass, message, attempts, parked, parksKey, replayOf);
  }

  /** The error message as journaled: at most {@link #MAX_MESSAGE} characters and "...". */
  String journaledMessage() {
    return errorMessage.length() > MAX_MESSAGE ? errorMessage.substring(0, MAX_MESSAGE) + "..." : errorMessage;
  }
}
