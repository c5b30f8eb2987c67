package io.fencepost.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * INTERNAL API: marks a public type or member that Fencepost's modules share but applications must
 * not use; it may change or go in any release, as Pekko marks such code with its own
 * {@code InternalApi}. The architecture test keeps the examples (application code) off it, and lets
 * a public signature that carries it name an internal type.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.CONSTRUCTOR, ElementType.FIELD})
public @interface InternalApi {
}
