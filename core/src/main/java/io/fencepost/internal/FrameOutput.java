package io.fencepost.internal;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * An unsynchronized, growable byte buffer for Fencepost's binary frames: fixed-width longs
 * (big-endian), unsigned varints (7 bits a byte, low groups first), strings as a varint length and
 * UTF-8. Sized from a hint so a frame is normally written without growing.
 */
final class FrameOutput {

  private byte[] buf;
  private int size;

  FrameOutput(int capacityHint) {
    this.buf = new byte[Math.max(64, capacityHint)];
  }

  int size() {
    return size;
  }

  /** The frame written so far, in an array of exactly its size. */
  byte[] toByteArray() {
    return size == buf.length ? buf : Arrays.copyOf(buf, size);
  }

  private void ensure(int more) {
    if (size + more > buf.length) {
      long wanted = Math.max((long) buf.length * 2, (long) size + more);
      if (wanted > Integer.MAX_VALUE - 8) {
        throw new IllegalStateException("a journal frame of " + wanted + " bytes exceeds what one array holds");
      }
      buf = Arrays.copyOf(buf, (int) wanted);
    }
  }

  void writeByte(int b) {
    ensure(1);
    buf[size++] = (byte) b;
  }

  void writeLong(long v) {
    ensure(8);
    for (int shift = 56; shift >= 0; shift -= 8) {
      buf[size++] = (byte) (v >>> shift);
    }
  }

  void writeInt(int v) {
    ensure(4);
    for (int shift = 24; shift >= 0; shift -= 8) {
      buf[size++] = (byte) (v >>> shift);
    }
  }

  /** An unsigned varint: 1 byte below 128, at most 10 bytes. */
  void writeVarLong(long v) {
    ensure(10);
    while ((v & ~0x7FL) != 0) {
      buf[size++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    buf[size++] = (byte) v;
  }

  /** A count or length: must not be negative. */
  void writeCount(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("negative count " + n);
    }
    writeVarLong(n);
  }

  /** A signed value, zig-zag encoded (-1 takes 1 byte). */
  void writeSignedVarLong(long v) {
    writeVarLong((v << 1) ^ (v >> 63));
  }

  void writeBytes(byte[] b) {
    writeCount(b.length);
    ensure(b.length);
    System.arraycopy(b, 0, buf, size, b.length);
    size += b.length;
  }

  void writeString(String s) {
    writeBytes(s.getBytes(StandardCharsets.UTF_8));
  }
}
