package io.fencepost.examples;

import io.fencepost.JacksonSerializable;

/** A telemetry sample: a sensor's value. Superseded by the next sample within seconds. */
public record Reading(String sensor, double value) implements JacksonSerializable {
}
