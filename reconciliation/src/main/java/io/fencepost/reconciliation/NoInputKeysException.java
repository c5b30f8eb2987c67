package io.fencepost.reconciliation;

/**
 * Thrown by {@link Reconciliation#run} when checking by the journaled keys
 * ({@link Reconciliation#appliedKeysFromJournal}) and no record of the topic has an input key
 * ({@link Reconciliation#inputKeys}) while the journal holds business keys:
 * the input keys are not the actors' business keys, and a report would call every record missing.
 */
public final class NoInputKeysException extends IllegalStateException {

  private final long records;
  private final long journaledKeys;

  NoInputKeysException(long records, long journaledKeys) {
    super("none of the topic's " + records + " records has an input key, while the journal holds " + journaledKeys
        + " business keys: the input keys are not how the pipeline's actors key records");
    this.records = records;
    this.journaledKeys = journaledKeys;
  }

  /** Records read from the topic. */
  public long records() {
    return records;
  }

  /** Business-key digests the journal holds. */
  public long journaledKeys() {
    return journaledKeys;
  }
}
