package io.fencepost.errors;

import java.util.List;

/**
 * Per-key ordering: records of this batch carry keys that are parked behind an earlier failed record
 * of the same key. Nothing was applied; the pipeline dead-letters those records as parked and resends
 * the rest. They come back when the failed record is replayed.
 */
public final class RecordsParkedException extends FencepostException {

  private final String partition;
  private final List<Long> offsets;

  public RecordsParkedException(String partition, List<Long> offsets) {
    super("[" + partition + "] records at offsets " + offsets + " have keys parked behind an earlier failed record"
        + " (per-key-ordering): dead-letter them as parked, then resend the batch", null);
    this.partition = partition;
    this.offsets = List.copyOf(offsets);
  }

  public String partition() {
    return partition;
  }

  /** The offsets to park. */
  public List<Long> offsets() {
    return offsets;
  }

  @Override
  public boolean isRetriable() {
    return true;
  }
}
