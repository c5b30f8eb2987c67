package io.fencepost.errors;

/**
 * A partition actor's handler threw for one record: nothing of the batch was applied. When the
 * cause was a {@link RetriableException} the pipeline retries with backoff; otherwise, or once the
 * attempts are spent, it dead-letters the record at {@link #offset()} and applies the rest.
 */
public final class HandlerFailedException extends FencepostException {

  private final String partition;
  private final long offset;
  private final boolean retriable;
  private final String causeClass;
  private final String causeMessage;

  public HandlerFailedException(String partition, long offset, boolean retriable, String causeClass,
      String causeMessage, Throwable cause) {
    super("[" + partition + "] handler failed at offset [" + offset + "]: " + causeClass + ": " + causeMessage
        + "; nothing of the batch was applied" + (retriable ? " (retriable)" : ""), cause);
    this.partition = partition;
    this.offset = offset;
    this.retriable = retriable;
    this.causeClass = causeClass;
    this.causeMessage = causeMessage == null ? "" : causeMessage;
  }

  public String partition() {
    return partition;
  }

  /** The offset of the record whose handler failed. */
  public long offset() {
    return offset;
  }

  /** The handler's exception class. */
  public String causeClass() {
    return causeClass;
  }

  /** The handler's exception message. */
  public String causeMessage() {
    return causeMessage;
  }

  @Override
  public boolean isRetriable() {
    return retriable;
  }
}
