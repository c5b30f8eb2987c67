package io.fencepost;

/**
 * Marker for events, states and values that Pekko should serialize with Jackson CBOR (bound in
 * Fencepost's reference.conf). Implement it on your event and state classes, or bind them to a
 * serializer of your own in {@code pekko.actor.serialization-bindings}.
 */
public interface JacksonSerializable {
}
