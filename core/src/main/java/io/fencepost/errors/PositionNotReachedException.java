package io.fencepost.errors;

/**
 * The partition's owner answered, but within the query's timeout its applied state did not reach
 * the query's position bound: the records up to the bound are not applied yet (the partition lags,
 * is halted, or the bound names an offset not yet written to the partition).
 */
public final class PositionNotReachedException extends RetriableException {

  private final String partition;
  private final long appliedNextOffset;
  private final long requiredNextOffset;

  public PositionNotReachedException(String partition, long appliedNextOffset, long requiredNextOffset,
      long waitedMillis) {
    super("[" + partition + "] applied state is at next offset " + appliedNextOffset + ", the query needs "
        + requiredNextOffset + " or more; not reached within " + waitedMillis + " ms");
    this.partition = partition;
    this.appliedNextOffset = appliedNextOffset;
    this.requiredNextOffset = requiredNextOffset;
  }

  /** The partition's entity id. */
  public String partition() {
    return partition;
  }

  /** The owner's applied next offset when the query gave up ({@code -1}: nothing applied). */
  public long appliedNextOffset() {
    return appliedNextOffset;
  }

  /** The next offset the query's bound needed. */
  public long requiredNextOffset() {
    return requiredNextOffset;
  }
}
