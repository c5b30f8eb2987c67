package io.fencepost;

import io.fencepost.annotation.InternalApi;
import io.fencepost.internal.KeyDigest;

/**
 * INTERNAL API: the 128-bit digest of a business key exactly as the key window and the journal's
 * applied-key digests compute it, for verification that compares keys it reads with what the journal
 * holds. One instance per thread: not thread-safe.
 */
@InternalApi
public final class BusinessKeyDigest {

  private final KeyDigest digest = new KeyDigest();

  /**
   * Writes the digest of {@code key} as {high, low} into {@code out}.
   *
   * @throws IllegalArgumentException for a key with an unpaired surrogate (no pipeline applies such a key)
   */
  public void digest(String key, long[] out) {
    digest.digest(key, out);
  }
}
