package io.github.entropydiode.client;

import io.grpc.Status;

/** PERMISSION_DENIED: the key is valid but lacks the scope this call needs. */
public final class PermissionDeniedException extends EntropyException {
  private static final long serialVersionUID = 1L;

  /**
   * A PERMISSION_DENIED error.
   *
   * @param details the server's message
   * @param cause the underlying exception, or null
   */
  public PermissionDeniedException(String details, Throwable cause) {
    super(Status.Code.PERMISSION_DENIED, details, cause);
  }
}
