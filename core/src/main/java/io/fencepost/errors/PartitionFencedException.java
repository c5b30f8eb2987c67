package io.fencepost.errors;

/**
 * A partition actor's journal write lost to another incarnation of the same partition (a stale owner
 * or a new one): the database rejected it, nothing of the batch was applied, and the actor stopped.
 * The winner's write, offset included, is what counts; a rightful owner recovers it and goes on from
 * {@link #storedNextOffset()}.
 */
public final class PartitionFencedException extends RetriableException {

  private final String partition;
  private final long expectedNextOffset;
  private final long storedNextOffset;

  public PartitionFencedException(String partition, long expectedNextOffset, long storedNextOffset) {
    super("[" + partition + "] fenced: this incarnation expected next offset [" + expectedNextOffset
        + "] but another incarnation had written up to [" + storedNextOffset
        + "]; the batch was not applied. Resume from the stored offset.");
    this.partition = partition;
    this.expectedNextOffset = expectedNextOffset;
    this.storedNextOffset = storedNextOffset;
  }

  public String partition() {
    return partition;
  }

  public long expectedNextOffset() {
    return expectedNextOffset;
  }

  public long storedNextOffset() {
    return storedNextOffset;
  }
}
