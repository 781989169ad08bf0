package io.github.entropydiode.client;

import io.grpc.Status;
import java.util.OptionalLong;

/** RESOURCE_EXHAUSTED: the key's quota is used up; retry after {@link #retryAfterMs()}. */
public final class ResourceExhaustedException extends EntropyException {
  private static final long serialVersionUID = 1L;

  private final long retryAfterMs;

  /**
   * A RESOURCE_EXHAUSTED error.
   *
   * @param details the server's message
   * @param retryAfterMs the server's {@code retry-after-ms} trailer, or -1 when it sent none
   * @param cause the underlying exception, or null
   */
  public ResourceExhaustedException(String details, long retryAfterMs, Throwable cause) {
    super(Status.Code.RESOURCE_EXHAUSTED, details, cause);
    this.retryAfterMs = retryAfterMs;
  }

  /** How long to wait before retrying, from the server's {@code retry-after-ms} trailer. */
  public OptionalLong retryAfterMs() {
    return retryAfterMs >= 0 ? OptionalLong.of(retryAfterMs) : OptionalLong.empty();
  }
}
