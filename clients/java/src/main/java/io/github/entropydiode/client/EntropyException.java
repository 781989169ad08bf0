package io.github.entropydiode.client;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Objects;

/**
 * A failed call: the gRPC status code and the server's message. Each status the gateway documents
 * has a subclass, so callers catch what they can act on ({@link UnavailableException}: retry;
 * {@link InvalidArgumentException}: fix the call) instead of comparing codes.
 */
public class EntropyException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private static final Metadata.Key<String> RETRY_AFTER_MS =
      Metadata.Key.of("retry-after-ms", Metadata.ASCII_STRING_MARSHALLER);

  private final Status.Code code;
  private final String details;

  /**
   * An error of {@code code} with the server's {@code details}.
   *
   * @param code the gRPC status code
   * @param details the server's message (or the client's, for errors found before sending)
   * @param cause the underlying exception, or null
   */
  public EntropyException(Status.Code code, String details, Throwable cause) {
    super(code + ": " + details, cause);
    this.code = Objects.requireNonNull(code, "code");
    this.details = details;
  }

  /** The gRPC status code. */
  public Status.Code code() {
    return code;
  }

  /** The server's message, naming the field and bound for INVALID_ARGUMENT. */
  public String details() {
    return details;
  }

  /** True when the same call may succeed later: UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED. */
  public boolean isRetryable() {
    return code == Status.Code.UNAVAILABLE
        || code == Status.Code.DEADLINE_EXCEEDED
        || code == Status.Code.RESOURCE_EXHAUSTED;
  }

  /** The exception for what grpc-java reported. */
  static EntropyException from(StatusRuntimeException e) {
    Status status = e.getStatus();
    String details = status.getDescription() != null ? status.getDescription() : "";
    if (details.isEmpty() && status.getCause() != null) {
      details = String.valueOf(status.getCause().getMessage());
    }
    return of(status.getCode(), details, e, e.getTrailers());
  }

  /** The exception for {@code code}, of the matching subclass. */
  static EntropyException of(Status.Code code, String details, Throwable cause, Metadata trailers) {
    return switch (code) {
      case INVALID_ARGUMENT -> new InvalidArgumentException(details, cause);
      case UNAUTHENTICATED -> new UnauthenticatedException(details, cause);
      case PERMISSION_DENIED -> new PermissionDeniedException(details, cause);
      case RESOURCE_EXHAUSTED -> new ResourceExhaustedException(details, retryAfterMs(trailers), cause);
      case UNAVAILABLE -> new UnavailableException(details, cause);
      case DEADLINE_EXCEEDED -> new DeadlineExceededException(details, cause);
      case CANCELLED -> new CancelledException(details, cause);
      case FAILED_PRECONDITION -> new FailedPreconditionException(details, cause);
      default -> new EntropyException(code, details, cause);
    };
  }

  private static long retryAfterMs(Metadata trailers) {
    String value = trailers == null ? null : trailers.get(RETRY_AFTER_MS);
    try {
      long ms = value == null ? -1 : Long.parseLong(value.trim());
      return ms >= 0 ? ms : -1;
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
