package io.fencepost.reconciliation;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import io.fencepost.BusinessKeyDigest;
import io.fencepost.reconciliation.internal.KeyCounts;

/**
 * The keys of one reconciliation: each counted by its digest, computed as the key window computes it
 * (so keys read from the topic meet the digests the journal stores), with a few readable keys kept
 * for the report. One thread.
 */
final class KeyTally {

  /** Readable keys kept from the input, at most. */
  private static final int INPUT_SAMPLES = 100_000;

  final KeyCounts counts = new KeyCounts();
  private final BusinessKeyDigest digest = new BusinessKeyDigest();
  private final long[] last = new long[2];
  private final Map<Long, String> samples = new HashMap<>();

  /** Counts one copy of {@code key} in the input, in time bucket {@code bucket}; returns its slot. */
  int input(String key, int bucket) {
    digest(key);
    int slot = counts.addInput(last[0], last[1], bucket);
    if (samples.size() < INPUT_SAMPLES) {
      samples.put(last[0] ^ last[1], key);
    }
    return slot;
  }

  /** Counts one application of the key last counted by {@link #input}. */
  void appliedLastInput() {
    counts.addApplied(last[0], last[1]);
  }

  /** Counts one application of {@code key}, found in an effect. */
  void applied(String key) {
    digest(key);
    counts.addApplied(last[0], last[1]);
    samples.putIfAbsent(last[0] ^ last[1], key);
  }

  /** Counts one application of each digest in {@code digests} ({high, low} pairs, as the journal stores them). */
  void appliedDigests(long[] digests) {
    for (int i = 0; i + 1 < digests.length; i += 2) {
      counts.addApplied(digests[i], digests[i + 1]);
    }
  }

  /**
   * The key's digest into {@code last}. A key with an unpaired surrogate (which no pipeline applies:
   * its actor refuses it, and the record is dead-lettered) is digested as its UTF-8 form reads, with
   * '?' in the surrogate's place, so that the record is still counted, as dead-lettered or missing.
   */
  private void digest(String key) {
    try {
      digest.digest(key, last);
    } catch (IllegalArgumentException malformed) {
      digest.digest(new String(key.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8), last);
    }
  }

  /** A readable form of the key with this digest, or "?" when none was kept. */
  String sample(long hi, long lo) {
    return samples.getOrDefault(hi ^ lo, "?");
  }
}
