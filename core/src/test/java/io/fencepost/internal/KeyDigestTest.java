package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The reused-buffer digest is exactly the first 16 bytes of SHA-256 of the key's UTF-8 bytes. */
class KeyDigestTest {

  @Test
  void everyKeyDigestsToTheFirst16BytesOfItsUtf8Sha256() throws Exception {
    KeyDigest digest = new KeyDigest();
    List<String> keys = List.of("", "pay-1", "pay-2", "x".repeat(200), "caf\u00e9", "pay-1",
        "\ud83d\udcb8 emoji", "x".repeat(70_000), "ascii after a long one", "\u007f\u0080", "x".repeat(4096),
        "x".repeat(4097), "x".repeat(4095) + "\u00e9", "x".repeat(4097) + "\u00e9", "\u00e9" + "x".repeat(5000),
        "\u0000nul", "\uffff\u0800\u07ff");
    long[] out = new long[2];
    for (String key : keys) {
      digest.digest(key, out);
      ByteBuffer expected = ByteBuffer.wrap(MessageDigest.getInstance("SHA-256")
          .digest(key.getBytes(StandardCharsets.UTF_8)));
      assertArrayEquals(new long[] {expected.getLong(), expected.getLong()}, out, key.length() > 40
          ? key.substring(0, 40) : key);
    }
  }

  @Test
  void aKeyWithAnUnpairedSurrogateIsRefusedNotMadeEqualToAnother() {
    KeyDigest digest = new KeyDigest();
    long[] out = new long[2];
    for (String key : List.of("pay-\ud800", "pay-\udc00", "\udc00\ud800", "pay-\ud800x", "x".repeat(5000) + "\ud800")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> digest.digest(key, out));
      assertTrue(e.getMessage().startsWith("the business key has an unpaired surrogate (\\u"), e.getMessage());
    }
    digest.digest("pay-?", out);   // the digest is still usable, and a well-formed key next to it is fine
    long[] question = out.clone();
    digest.digest("pay-\ud83d\udcb8", out);
    assertTrue(question[0] != out[0] || question[1] != out[1]);
  }
}
