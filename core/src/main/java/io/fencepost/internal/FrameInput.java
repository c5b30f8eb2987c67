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
    long n = readVarLong();
    if (n < 0 || n > buf.length - pos) {
      throw new IOException("count " + n + " at byte " + pos + " exceeds the " + (buf.length - pos) + " bytes left");
    }
    return (int) n;
  }

  byte[] readBytes() throws IOException {
    int n = readCount();
    byte[] b = Arrays.copyOfRange(buf, pos, pos + n);
    pos += n;
    return b;
  }

  String readString() throws IOException {
    int n = readCount();
    String s = new String(buf, pos, n, StandardCharsets.UTF_8);
    pos += n;
    return s;
  }
}
