package io.fencepost.kafka;

import java.util.Optional;

import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.serialization.DisabledJavaSerializer;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;

/**
 * Whether a query or reply can travel between nodes, checked on every node alike (a single node
 * never serializes them, but its queries must work the same once it has peers): the failure names
 * the class and the fix, where Pekko would drop the message with a log line on the sending node.
 */
final class QueryCodecs {

  private final Serialization serialization;

  QueryCodecs(ActorSystem<?> system) {
    this.serialization = SerializationExtension.get(system.classicSystem());
  }

  /** Why {@code o} cannot be sent between nodes; empty when it can (null can). */
  Optional<String> unserializable(Object o, String what) {
    if (o == null) {
      return Optional.empty();
    }
    try {
      if (!(serialization.findSerializerFor(o) instanceof DisabledJavaSerializer)) {
        return Optional.empty();
      }
    } catch (Exception e) {   // NotSerializableException, thrown undeclared: no serializer is bound to the class
    }
    return Optional.of("a " + what + " of class " + o.getClass().getName() + " has no serializer: implement "
        + "io.fencepost.JacksonSerializable or bind a serializer to it under pekko.actor.serialization-bindings");
  }
}
