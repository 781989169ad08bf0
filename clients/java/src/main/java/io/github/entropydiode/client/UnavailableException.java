package io.github.entropydiode.client;

import io.grpc.Status;

/** UNAVAILABLE: not enough entropy within the server's maximum wait, the server is shutting down, or it cannot be reached. Nothing was consumed: retrying is safe. */
public final class UnavailableException extends EntropyException {
  private static final long serialVersionUID = 1L;

  /**
   * A UNAVAILABLE error.
   *
   * @param details the server's message
   * @param cause the underlying exception, or null
   */
  public UnavailableException(String details, Throwable cause) {
    super(Status.Code.UNAVAILABLE, details, cause);
  }
}
