/** Annotations on Fencepost's own code: {@link io.fencepost.annotation.InternalApi}. */
package io.fencepost.annotation;
