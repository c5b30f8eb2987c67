package io.fencepost.internal;

import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** Reads what {@link FrameOutput} wrote; a frame that ends early or holds a bad length is an IOException. */
final class FrameInput {

  private final byte[] buf;
  private int pos;

  FrameInput(byte[] buf) {
    this.buf = buf;
  }

  private void need(long n) throws EOFException {
    if (n < 0 || pos + n > buf.length) {
      throw new EOFException("frame ends at byte " + buf.length + ", " + n + " more bytes expected at " + pos);
    }
  }

  /** Whether every byte was read. */
  boolean atEnd() {
    return pos == buf.length;
  }

  int readByte() throws EOFException {
    need(1);
    return buf[pos++] & 0xFF;
  }

  long readLong() throws EOFException {
    need(8);
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (buf[pos++] & 0xFF);
    }
    return v;
  }

  int readInt() throws EOFException {
    need(4);
    int v = 0;
    for (int i = 0; i < 4; i++) {
      v = (v << 8) | (buf[pos++] & 0xFF);
    }
    return v;
  }

  long readVarLong() throws IOException {
    long v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      int b = readByte();
      if (shift == 63 && b > 1) {
        throw new IOException("varint overflows 64 bits at " + (pos - 1));
      }
      v |= (long) (b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        return v;
      }
    }
    throw new IOException("varint longer than 10 bytes at " + pos);
  }

  long readSignedVarLong() throws IOException {
    long v = readVarLong();
    return (v >>> 1) ^ -(v & 1);
  }

  /** A non-negative int (a tally, not the size of what follows). */
  int readVarInt() throws IOException {
    long n = readVarLong();
    if (n < 0 || n > Integer.MAX_VALUE) {
      throw new IOException("value " + n + " at byte " + pos + " is not an int >= 0");
    }
    return (int) n;
  }

  /** A count or length, checked against the bytes left (each element takes at least one byte). */
  int readCount() throws IOException {
    return readCount(1);
  }

  /** A count of elements of at least {@code minBytes} each, checked against the bytes left. */
  int readCount(int minBytes) throws IOException {
    long n = readVarLong();
    if (n < 0 || n > (buf.length - pos) / minBytes) {
      throw new IOException("count " + n + " at byte " + pos + " does not fit the " + (buf.length - pos)
          + " bytes left");
    }
    return (int) n;
  }

  /** A byte that must be 0 (false) or 1 (true). */
  boolean readBoolean() throws IOException {
    int b = readByte();
    if (b > 1) {
      throw new IOException("byte " + b + " at " + (pos - 1) + " is not a boolean");
    }
    return b == 1;
  }

  byte[] readBytes() throws IOException {
    int n = readCount();
    byte[] b = Arrays.copyOfRange(buf, pos, pos + n);
    pos += n;
    return b;
  }

  /** What {@link FrameOutput#writeString} wrote. */
  String readString() throws IOException {
    int n = readCount();
    int end = pos + n;
    boolean ascii = true;
    for (int i = pos; i < end && ascii; i++) {
      ascii = buf[i] > 0;
    }
    if (ascii) {
      String s = new String(buf, pos, n, StandardCharsets.ISO_8859_1);
      pos = end;
      return s;
    }
    char[] chars = new char[n];
    int count = 0;
    while (pos < end) {
      int b = buf[pos] & 0xFF;
      if (b >= 1 && b < 0x80) {
        chars[count++] = (char) b;
        pos++;
      } else if ((b & 0xE0) == 0xC0 && pos + 1 < end && (buf[pos + 1] & 0xC0) == 0x80
          && (b >= 0xC2 || (b == 0xC0 && buf[pos + 1] == (byte) 0x80))) {
        // two bytes: U+0080..U+07FF, or NUL as C0 80 (nothing else written as an overlong form)
        chars[count++] = (char) (((b & 0x1F) << 6) | (buf[pos + 1] & 0x3F));
        pos += 2;
      } else if ((b & 0xF0) == 0xE0 && pos + 2 < end && (buf[pos + 1] & 0xC0) == 0x80
          && (buf[pos + 2] & 0xC0) == 0x80 && (b > 0xE0 || (buf[pos + 1] & 0xFF) >= 0xA0)) {
        // three bytes: U+0800..U+FFFF, surrogates on their own included
        chars[count++] = (char) (((b & 0x0F) << 12) | ((buf[pos + 1] & 0x3F) << 6) | (buf[pos + 2] & 0x3F));
        pos += 3;
      } else {
        throw new IOException("malformed string byte " + b + " at " + pos);
      }
    }
    return new String(chars, 0, count);
  }
}
