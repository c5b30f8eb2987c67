package io.fencepost.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;

/**
 * 128-bit digests of business keys: the first 16 bytes of SHA-256 of the key's UTF-8 bytes. A
 * cryptographic digest, not a fast hash, so that nobody who controls keys can make two different
 * keys collide and get a legitimate record dropped as a duplicate (the chance of an accidental
 * collision among a billion keys is about 10^-21). Unkeyed fast hashes (xxHash, MurmurHash, CityHash)
 * have known ways to craft collisions, and a key dropped that way is a record lost.
 *
 * <p>A key with an unpaired surrogate is refused ({@link IllegalArgumentException}): UTF-8 cannot
 * encode it, so it would share its digest with another key.
 *
 * <p>Allocation-free for keys of up to 4,096 ASCII characters: the key is encoded into a reused
 * buffer and digested into a reused array. One instance per actor: not thread-safe.
 */
public final class KeyDigest {

  private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** Longer keys are encoded with {@code getBytes}, so one huge key does not pin a huge buffer. */
  private static final int MAX_BUFFERED = 4096;

  private final MessageDigest sha256;
  private final byte[] digest = new byte[32];
  private byte[] ascii = new byte[64];

  public KeyDigest() {
    try {
      this.sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required by the Java platform but missing", e);
    }
  }

  /** Writes the key's digest as {high, low} into {@code out}. */
  public void digest(String key, long[] out) {
    int length = key.length();
    if (length > MAX_BUFFERED) {
      requireWellFormed(key, 0);
      sha256.update(key.getBytes(StandardCharsets.UTF_8));   // rare: not worth keeping a buffer that large
      finish(out);
      return;
    }
    if (ascii.length < length) {
      ascii = new byte[Math.max(length, Math.min(MAX_BUFFERED, ascii.length * 2))];
    }
    byte[] buf = ascii;
    for (int i = 0; i < length; i++) {
      char c = key.charAt(i);
      if (c >= 0x80) {
        requireWellFormed(key, i);
        sha256.update(key.getBytes(StandardCharsets.UTF_8));
        finish(out);
        return;
      }
      buf[i] = (byte) c;   // an ASCII character is its own UTF-8 byte
    }
    sha256.update(buf, 0, length);
    finish(out);
  }

  /**
   * Refuses a key with an unpaired surrogate: its UTF-8 form replaces the surrogate with '?', so it
   * would have the digest of another key ("pay-?" for "pay-" and an unpaired U+D800) and one of two records be
   * dropped as a duplicate of the other.
   */
  private static void requireWellFormed(String key, int from) {
    for (int i = from; i < key.length(); i++) {
      char c = key.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        throw new IllegalArgumentException("the business key has an unpaired surrogate (\\u"
            + Integer.toHexString(c).toUpperCase(Locale.ROOT) + ") at index " + i + ": as UTF-8 it "
            + "would equal another key, so it cannot tell duplicates apart. Return well-formed text from "
            + "businessKey(), or send the key header as valid UTF-8");
      }
    }
  }

  private void finish(long[] out) {
    try {
      sha256.digest(digest, 0, digest.length);
    } catch (DigestException e) {
      throw new IllegalStateException("SHA-256 did not fit 32 bytes", e);
    }
    out[0] = (long) LONGS.get(digest, 0);
    out[1] = (long) LONGS.get(digest, 8);
  }
}
