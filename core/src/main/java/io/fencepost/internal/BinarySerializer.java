package io.fencepost.internal;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.NotSerializableException;
import java.io.UncheckedIOException;

import io.fencepost.PartitionId;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializerWithStringManifest;

/**
 * The frame of Fencepost's Pekko serializers: data streams over byte arrays, user objects inside
 * through {@link NestedSerialization}, an unknown manifest reported as written by another version.
 *
 * <p>Every payload starts with its format version, one byte: {@value #FORMAT_VERSION} unless a
 * manifest says otherwise ({@link #formatVersion}). A later format of a manifest adds the next
 * version and reads both once released; this one refuses any other version, naming it.
 */
public abstract class BinarySerializer extends SerializerWithStringManifest {

  /** The format version every payload starts with. */
  public static final int FORMAT_VERSION = 1;

  /** User objects (events, states, record values), through the serializers bound to their classes. */
  protected final NestedSerialization nested;
  private final String what;
  private final ExtendedActorSystem system;

  protected BinarySerializer(ExtendedActorSystem system, String what) {
    this.nested = new NestedSerialization(system);
    this.what = what;
    this.system = system;
  }

  protected final void writePartition(DataOutputStream out, PartitionId p) throws IOException {
    out.writeUTF(p.group());
    out.writeUTF(p.topic());
    out.writeInt(p.partition());
  }

  protected final PartitionId readPartition(DataInputStream in) throws IOException {
    return new PartitionId(in.readUTF(), in.readUTF(), in.readInt());
  }

  protected final void writeRef(DataOutputStream out, ActorRef<?> ref) throws IOException {
    out.writeUTF(ActorRefResolver.get(Adapter.toTyped(system)).toSerializationFormat(ref));
  }

  protected final <T> ActorRef<T> readRef(DataInputStream in) throws IOException {
    return ActorRefResolver.get(Adapter.toTyped(system)).resolveActorRef(in.readUTF());
  }

  /** {@code s} (null as empty) cut to 8,000 characters: an error's text between nodes. */
  protected static String truncate(String s) {
    String v = s == null ? "" : s;
    return v.length() > 8000 ? v.substring(0, 8000) + "..." : v;
  }

  /** Writes {@code o}; the manifest was already chosen by {@link #manifest(Object)}. */
  protected abstract void write(DataOutputStream out, Object o) throws IOException;

  /** Reads what {@link #write} wrote under {@code manifest}; null for an unknown manifest. */
  protected abstract Object read(DataInputStream in, String manifest) throws IOException;

  /** The failure for an object this serializer does not handle. */
  protected final IllegalArgumentException cannotSerialize(Object o) {
    return new IllegalArgumentException(getClass().getSimpleName() + " cannot serialize " + o.getClass().getName());
  }

  /**
   * The format version the payloads of {@code manifest} are written and read in:
   * {@value #FORMAT_VERSION} unless a subclass changed a manifest's format.
   */
  protected int formatVersion(String manifest) {
    return FORMAT_VERSION;
  }

  @Override
  public byte[] toBinary(Object o) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(formatVersion(manifest(o)));
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

  /**
   * Refuses a payload of another format version than {@value #FORMAT_VERSION} (or none): it was
   * written by another build of Fencepost, and reading it as this one would misread every field.
   */
  protected final void checkVersion(byte[] bytes, String manifest) throws NotSerializableException {
    if (bytes.length == 0) {
      throw new NotSerializableException("empty " + what + " payload, manifest [" + manifest + "]");
    }
    int version = formatVersion(manifest);
    if (bytes[0] > version) {
      throw new NotSerializableException(what + " payload of manifest [" + manifest + "] has format version "
          + (bytes[0] & 0xff) + "; this version of Fencepost reads version " + version + " only: it was "
          + "written by a newer Fencepost. Upgrade every node, or roll back the one that wrote it.");
    }
    if (bytes[0] != version) {
      throw new NotSerializableException(what + " payload of manifest [" + manifest + "] has format version "
          + (bytes[0] & 0xff) + "; this version of Fencepost reads version " + version + " only: it was "
          + "written by a pre-release snapshot build of Fencepost, whose " + (manifest.equals("S") ? "snapshots" : "rows")
          + " are not read. See \"Journal formats\" in docs/deployment.md.");
    }
  }

  /** The failure for a manifest this serializer does not know. */
  protected final NotSerializableException unknownManifest(String manifest) {
    return new NotSerializableException("unknown " + what + " manifest [" + manifest + "]: written by another "
        + "build of Fencepost (a newer one, or a pre-release snapshot build, whose journals are not read). "
        + "See \"Journal formats\" in docs/deployment.md.");
  }

  @Override
  public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
    checkVersion(bytes, manifest);
    Object result;
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes, 1, bytes.length - 1))) {
      result = read(in, manifest);
    } catch (IOException e) {
      throw corrupt(bytes, manifest, e);
    }
    if (result == null) {
      throw unknownManifest(manifest);
    }
    return result;
  }
}
