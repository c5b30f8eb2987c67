package io.fencepost.internal;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.NotSerializableException;
import java.io.UncheckedIOException;

import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.serialization.SerializerWithStringManifest;

/**
 * The frame of Fencepost's Pekko serializers: data streams over byte arrays, user objects inside
 * through {@link NestedSerialization}, an unknown manifest reported as written by another version.
 */
public abstract class BinarySerializer extends SerializerWithStringManifest {

  /** User objects (events, states, record values), through the serializers bound to their classes. */
  protected final NestedSerialization nested;
  private final String what;

  protected BinarySerializer(ExtendedActorSystem system, String what) {
    this.nested = new NestedSerialization(system);
    this.what = what;
  }

  /** Writes {@code o}; the manifest was already chosen by {@link #manifest(Object)}. */
  protected abstract void write(DataOutputStream out, Object o) throws IOException;

  /** Reads what {@link #write} wrote under {@code manifest}; null for an unknown manifest. */
  protected abstract Object read(DataInputStream in, String manifest) throws IOException;

  /** The failure for an object this serializer does not handle. */
  protected final IllegalArgumentException cannotSerialize(Object o) {
    return new IllegalArgumentException(getClass().getSimpleName() + " cannot serialize " + o.getClass().getName());
  }

  @Override
  public byte[] toBinary(Object o) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      write(out, o);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /** The failure for a payload that cannot be read under its manifest. */
  protected final UncheckedIOException corrupt(byte[] bytes, String manifest, IOException e) {
    return new UncheckedIOException("corrupt " + what + " payload of " + bytes.length + " bytes, manifest ["
        + manifest + "]", e);
  }

  @Override
  public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
    Object result;
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      result = read(in, manifest);
    } catch (IOException e) {
      throw corrupt(bytes, manifest, e);
    }
    if (result == null) {
      throw new NotSerializableException("unknown " + what + " manifest [" + manifest
          + "]: written by a newer Fencepost? Roll back or upgrade every node.");
    }
    return result;
  }
}
