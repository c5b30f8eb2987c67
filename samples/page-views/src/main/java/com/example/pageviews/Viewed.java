package com.example.pageviews;

import io.fencepost.JacksonSerializable;

/** The event: one view of {@code page}, journaled once. */
public record Viewed(String page) implements JacksonSerializable {
}
