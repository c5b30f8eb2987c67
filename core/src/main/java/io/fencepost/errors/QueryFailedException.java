package io.fencepost.errors;

/**
 * A partition's {@code onQuery} threw for a query (or the query or its reply could not be sent
 * between nodes): asking again gets the same answer. Names the partition and the cause's class
 * and message, as thrown on the node that owns the partition.
 */
public final class QueryFailedException extends FatalException {

  private final String partition;
  private final String causeClass;

  public QueryFailedException(String partition, String causeClass, String causeMessage) {
    super("[" + partition + "] query failed: " + causeClass + ": " + causeMessage);
    this.partition = partition;
    this.causeClass = causeClass;
  }

  /** The partition's entity id. */
  public String partition() {
    return partition;
  }

  /** The class name of what {@code onQuery} threw. */
  public String causeClass() {
    return causeClass;
  }
}
