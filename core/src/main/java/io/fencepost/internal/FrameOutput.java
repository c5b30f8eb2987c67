package io.fencepost.internal;

import java.io.OutputStream;
import java.util.Arrays;

/**
 * An unsynchronized, growable byte buffer for Fencepost's binary frames: fixed-width longs
 * (big-endian), unsigned varints (7 bits a byte, low groups first), strings as a varint length and
 * modified UTF-8 (as {@code DataOutput.writeUTF} without its 64 KiB limit: each char on its own, so
 * any Java string, one with a lone surrogate too, reads back exactly). Sized from a hint so a frame
 * is normally written without growing.
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

  private static final int MAX_ARRAY = Integer.MAX_VALUE - 8;

  private void ensure(int more) {
    long needed = (long) size + more;
    if (needed > buf.length) {
      if (needed > MAX_ARRAY) {
        throw new IllegalStateException("a journal frame of more than " + MAX_ARRAY + " bytes (" + needed
            + " needed) exceeds what one array holds: the batch's events, outbox records or keys are too large");
      }
      buf = Arrays.copyOf(buf, (int) Math.min(MAX_ARRAY, Math.max((long) buf.length * 2, needed)));
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
    writeBytes(b, 0, b.length);
  }

  /** {@code len} bytes of {@code b} from {@code off}, after their length. */
  void writeBytes(byte[] b, int off, int len) {
    writeCount(len);
    ensure(len);
    System.arraycopy(b, off, buf, size, len);
    size += len;
  }

  /** The buffer itself (valid up to {@link #size()}, until the next write). */
  byte[] array() {
    return buf;
  }

  /** This buffer as an output stream (raw bytes, no lengths). */
  OutputStream stream() {
    return new OutputStream() {
      @Override
      public void write(int b) {
        writeByte(b);
      }

      @Override
      public void write(byte[] b, int off, int len) {
        ensure(len);
        System.arraycopy(b, off, buf, size, len);
        size += len;
      }
    };
  }

  void writeString(String s) {
    int chars = s.length();
    long counted = chars;
    for (int i = 0; i < chars; i++) {
      char c = s.charAt(i);
      if (c >= 0x80 || c == 0) {
        counted += c < 0x800 ? 1 : 2;
      }
    }
    if (counted > MAX_ARRAY) {
      throw new IllegalStateException("a string of " + chars + " chars (" + counted + " bytes) exceeds what a "
          + "journal frame holds");
    }
    int bytes = (int) counted;
    writeCount(bytes);
    ensure(bytes);
    if (bytes == chars) {
      for (int i = 0; i < chars; i++) {
        buf[size++] = (byte) s.charAt(i);   // ASCII without NUL: one byte a char
      }
      return;
    }
    for (int i = 0; i < chars; i++) {
      char c = s.charAt(i);
      if (c >= 1 && c < 0x80) {
        buf[size++] = (byte) c;
      } else if (c < 0x800) {
        buf[size++] = (byte) (0xC0 | (c >> 6));
        buf[size++] = (byte) (0x80 | (c & 0x3F));
      } else {
        buf[size++] = (byte) (0xE0 | (c >> 12));
        buf[size++] = (byte) (0x80 | ((c >> 6) & 0x3F));
        buf[size++] = (byte) (0x80 | (c & 0x3F));
      }
    }
  }
}
