package io.fencepost.internal;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * 128-bit digests of business keys: the first 16 bytes of SHA-256. A cryptographic digest, not a
 * fast hash, so that nobody who controls keys can make two different keys collide and get a
 * legitimate record dropped as a duplicate (the chance of an accidental collision among a billion
 * keys is about 10^-21). One instance per actor: not thread-safe.
 */
public final class KeyDigest {

  private final MessageDigest sha256;

  public KeyDigest() {
    try {
      this.sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required by the Java platform but missing", e);
    }
  }

  /** Writes the key's digest as {high, low} into {@code out}. */
  public void digest(String key, long[] out) {
    byte[] d = sha256.digest(key.getBytes(StandardCharsets.UTF_8));
    ByteBuffer b = ByteBuffer.wrap(d);
    out[0] = b.getLong();
    out[1] = b.getLong();
  }
}
