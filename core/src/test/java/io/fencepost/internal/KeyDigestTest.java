package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The reused-buffer digest is exactly the first 16 bytes of SHA-256 of the key's UTF-8 bytes. */
class KeyDigestTest {

  @Test
  void everyKeyDigestsToTheFirst16BytesOfItsUtf8Sha256() throws Exception {
    KeyDigest digest = new KeyDigest();
    List<String> keys = List.of("", "pay-1", "pay-2", "x".repeat(200), "caf\u00e9", "pay-1",
        "\ud83d\udcb8 emoji", "lone \ud800 surrogate", "x".repeat(70_000), "ascii after a long one", "\u007f\u0080");
    long[] out = new long[2];
    for (String key : keys) {
      digest.digest(key, out);
      ByteBuffer expected = ByteBuffer.wrap(MessageDigest.getInstance("SHA-256")
          .digest(key.getBytes(StandardCharsets.UTF_8)));
      assertArrayEquals(new long[] {expected.getLong(), expected.getLong()}, out, key.length() > 40
          ? key.substring(0, 40) : key);
    }
  }
}
