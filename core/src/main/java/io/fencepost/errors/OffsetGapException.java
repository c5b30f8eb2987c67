package io.fencepost.errors;

/**
 * A batch would skip offsets: the partition's stored next offset is {@link #storedNextOffset()},
 * and the batch lacks offsets {@link #firstMissing()} up to {@link #nextPresent()} (exclusive) without
 * vouching that the log holds no readable record there. Applying it would move the fencing offset
 * over records nobody applied, so nothing was applied. The sender either shows that the log holds no
 * readable record in the holes (transaction markers, aborted or compacted records) and resends the
 * batch covering from the stored offset, or reads the partition again from the stored offset.
 */
public final class OffsetGapException extends FencepostException {

  private final String partition;
  private final long storedNextOffset;
  private final long firstMissing;
  private final long nextPresent;

  public OffsetGapException(String partition, long storedNextOffset, long firstMissing, long nextPresent) {
    super(storedNextOffset < 0
        ? "[" + partition + "] has no stored offset and the batch, starting at offset [" + nextPresent + "], does not "
            + "vouch that the partition starts there; nothing was applied. Resend it covering from where the partition "
            + "starts (auto-offset-reset) once the log shows no readable record before it"
        : "[" + partition + "] stored next offset is [" + storedNextOffset + "] and the batch lacks offsets ["
            + firstMissing + ".." + (nextPresent - 1) + "]: applying it would skip them; nothing was applied. Resend it "
            + "covering from the stored offset once the log shows no readable record there, or read the partition "
            + "again from the stored offset", null);
    this.partition = partition;
    this.storedNextOffset = storedNextOffset;
    this.firstMissing = firstMissing;
    this.nextPresent = nextPresent;
  }

  public String partition() {
    return partition;
  }

  /** The partition's stored next offset, where a batch must start covering; -1 when it has none. */
  public long storedNextOffset() {
    return storedNextOffset;
  }

  /** The first offset at or above the stored one that the batch lacks. */
  public long firstMissing() {
    return firstMissing;
  }

  /** The batch's next offset above {@link #firstMissing()}. */
  public long nextPresent() {
    return nextPresent;
  }

  @Override
  public boolean isRetriable() {
    return true;
  }
}
