package io.github.entropydiode.client;

import com.google.protobuf.ByteString;
import entropy.v1.Entropy.StreamRandomRequest;
import entropy.v1.Entropy.StreamRandomResponse;
import entropy.v1.EntropyServiceGrpc.EntropyServiceStub;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * StreamRandom as an {@link InputStream}: read it like a file, {@code transferTo} a file or a
 * hash, or wrap it in a {@code DataInputStream}.
 *
 * <p>After a transport error (the gateway restarted, the connection dropped) it opens a new stream
 * for exactly the bytes still owed, following the reconnect rule of {@link StreamOptions}. Nothing
 * it received is lost and nothing is repeated, because the gateway never serves a byte twice.
 * When the rule gives up, or the gateway refuses the call (a bad key, a quota, source kinds the
 * pool does not hold: {@link FailedPreconditionException}), {@code read} throws an
 * {@link IOException} whose cause is the {@link EntropyException}; an interrupted reader gets an
 * {@link InterruptedIOException}.
 *
 * <p>Not thread-safe, like most streams: one reader at a time. {@link #close()} cancels the call.
 */
public final class RandomStream extends InputStream {
  /** What an attempt's queue says when the server ended the stream with OK. */
  private static final Object END = new Object();
  /** Messages asked for ahead of the reader (flow control keeps the rest on the server). */
  private static final int PREFETCH = 2;

  private final EntropyServiceStub stub;
  private final ManagedChannel channel;
  private final long total;
  private final StreamOptions options;
  /** accept_kinds of every call, as wire numbers. */
  private final List<Integer> acceptKinds;
  /** construction of every call, as its wire number. */
  private final int construction;

  private long received;
  /** The provenance of the last message received, or null. */
  private entropy.v1.Provenance.DrawProvenance lastProvenance;
  private ByteString chunk = ByteString.EMPTY;
  private int position;
  private Attempt attempt;
  private boolean closed;
  /** Whether bytes stopped flowing, and since when (System.nanoTime). */
  private boolean broken;
  private long brokenSince;
  private int failures;
  /** What to report if the outage outlasts the budget. */
  private EntropyException lastError;
  private int reconnects;

  RandomStream(
      EntropyServiceStub stub,
      ManagedChannel channel,
      long totalBytes,
      StreamOptions options,
      List<Integer> acceptKinds,
      int construction) {
    if (totalBytes < 0) {
      throw new InvalidArgumentException(
          "totalBytes is " + totalBytes + ", must be >= 0 (0: no limit)", null);
    }
    this.stub = stub;
    this.channel = channel;
    this.total = totalBytes;
    this.options = options;
    this.acceptKinds = acceptKinds;
    this.construction = construction;
  }

  /** Bytes received from the gateway so far (delivered or buffered here). */
  public long received() {
    return received;
  }

  /**
   * Where the bytes of the last message received came from: the message the bytes of the last
   * {@code read} belong to, as the stream takes a new message only when the previous one is used
   * up. Null before the first message, or from a gateway that sends none.
   */
  public Provenance provenance() {
    return lastProvenance == null ? null : Provenance.fromProto(true, lastProvenance);
  }

  /** How many times a new stream was opened after a failure. */
  public int reconnects() {
    return reconnects;
  }

  @Override
  public int read() throws IOException {
    if (!fill()) {
      return -1;
    }
    return chunk.byteAt(position++) & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    java.util.Objects.checkFromIndexSize(off, len, b.length);
    if (len == 0) {
      return 0;
    }
    if (!fill()) {
      return -1;
    }
    int n = Math.min(len, chunk.size() - position);
    chunk.copyTo(b, position, off, n);
    position += n;
    return n;
  }

  @Override
  public int available() {
    return closed ? 0 : chunk.size() - position;
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      if (attempt != null) {
        attempt.cancel("stream closed by the client");
        attempt = null;
      }
      chunk = ByteString.EMPTY;
      position = 0;
    }
  }

  /** Makes sure unread bytes are buffered; false at the end of a bounded stream. */
  private boolean fill() throws IOException {
    if (closed) {
      throw new IOException("stream closed");
    }
    while (position >= chunk.size()) {
      if (total > 0 && received >= total) {
        return false;
      }
      if (attempt == null) {
        attempt = open();
      }
      long waitMs = attempt.gotMessage ? options.stallTimeout().toMillis() : attempt.timeoutMs;
      Object event;
      try {
        event = attempt.events.poll(waitMs, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        attempt.cancel("reader interrupted");
        attempt = null;
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while waiting for entropy");
      }
      if (event instanceof StreamRandomResponse message) {
        ByteString data = message.getData();
        if (message.hasProvenance()) {
          lastProvenance = message.getProvenance();
        }
        attempt.gotMessage = true;
        attempt.call.request(1);
        if (total > 0 && data.size() > total - received) {
          // The gateway sends at most what was asked; more would be a broken server.
          data = data.substring(0, (int) (total - received));
        }
        chunk = data;
        position = 0;
        received += data.size();
        if (!data.isEmpty()) {
          broken = false;
          failures = 0;
          lastError = null;
        }
        continue;
      }
      Attempt failed = attempt;
      attempt = null;
      if (event == END) {
        if (total == 0 || received >= total) {
          return false;
        }
        retryOrThrow(
            new UnavailableException(
                "the stream ended after " + received + " of " + total + " bytes", null),
            false);
      } else if (event == null) {
        failed.cancel("no message in time");
        String what = failed.gotMessage ? "no message" : "no first message";
        boolean clamped =
            !failed.gotMessage && failed.timeoutMs < options.attemptTimeout().toMillis();
        retryOrThrow(
            new DeadlineExceededException(what + " within " + waitMs + " ms", null), clamped);
      } else {
        Throwable t = (Throwable) event;
        retryOrThrow(
            EntropyException.from(
                Status.fromThrowable(t).asRuntimeException(Status.trailersFromThrowable(t))),
            false);
      }
    }
    return true;
  }

  /**
   * How grpc-java words a stream that ended without a gRPC status: something between the client
   * and the gateway (a load balancer that lost its upstream) ended it with an empty DATA frame, or
   * reset it. Nothing ended the call on purpose, so the reader resumes.
   */
  private static final String[] CUT_SHORT_MARKERS = {"unexpected EOS", "RST_STREAM"};

  /**
   * True when {@code error} is a stream cut short on the way (no status from the gateway): a
   * transport failure like UNAVAILABLE. The gateway itself never ends a stream that way.
   */
  static boolean cutShort(EntropyException error) {
    if (error.code() != Status.Code.INTERNAL && error.code() != Status.Code.UNKNOWN) {
      return false;
    }
    String details = error.details() == null ? "" : error.details();
    for (String marker : CUT_SHORT_MARKERS) {
      if (details.contains(marker)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Sleeps the backoff and returns if the rule allows another attempt; throws otherwise.
   * {@code clamped}: the error is the timeout of an attempt whose wait for its first message only
   * the budget's end made shorter than the attempt timeout.
   */
  private void retryOrThrow(EntropyException error, boolean clamped) throws IOException {
    if (error.code() != Status.Code.UNAVAILABLE
        && error.code() != Status.Code.DEADLINE_EXCEEDED
        && !cutShort(error)) {
      throw new IOException(error.getMessage(), error);
    }
    if (channel.isShutdown()) {
      throw new IOException("the client was closed: " + error.getMessage(), error);
    }
    long now = System.nanoTime();
    if (!broken) {
      broken = true;
      brokenSince = now;
      lastError = null;
    }
    // Such a timeout says nothing about the gateway: the error before it (the gateway's answer)
    // stays the one to report. Without one before it, the timeout is reported.
    if (!clamped || lastError == null) {
      lastError = error;
    }
    long budgetMs = options.reconnectBudget().toMillis();
    long spentMs = (now - brokenSince) / 1_000_000;
    if (budgetMs > 0 && spentMs >= budgetMs) {
      throw new IOException(
          "gave up reconnecting after "
              + spentMs
              + " ms ("
              + failures
              + " failed attempts; reconnect budget "
              + budgetMs
              + " ms), "
              + received
              + " bytes received: "
              + lastError.getMessage(),
          lastError);
    }
    long ceiling =
        Math.min(
            options.maxBackoff().toMillis(),
            options.initialBackoff().toMillis() << Math.min(failures, 20));
    failures++;
    long delay = ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
    if (budgetMs > 0) {
      delay = Math.min(delay, budgetMs - spentMs);
    }
    try {
      Thread.sleep(delay);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted while waiting to reconnect");
    }
  }

  /** Opens a stream for the bytes still owed, waiting for the channel to be ready. */
  private Attempt open() {
    long timeoutMs = options.attemptTimeout().toMillis();
    if (broken) {
      reconnects++;
      // The channel backs off on its own (up to minutes) after failed connects; this rule's
      // own backoff decides when to try, so the channel tries now.
      channel.resetConnectBackoff();
      long budgetMs = options.reconnectBudget().toMillis();
      if (budgetMs > 0) {
        long left = budgetMs - (System.nanoTime() - brokenSince) / 1_000_000;
        timeoutMs = Math.max(1, Math.min(timeoutMs, left));
      }
    }
    StreamRandomRequest request =
        StreamRandomRequest.newBuilder()
            .setChunkBytes(options.chunkBytes())
            .setTotalBytes(total == 0 ? 0 : total - received)
            .addAllAcceptKindsValue(acceptKinds)
            .setConstructionValue(construction)
            .build();
    Attempt a = new Attempt(timeoutMs);
    stub.withWaitForReady().streamRandom(request, a);
    return a;
  }

  /** One StreamRandom call: its events in arrival order, with flow control by the reader. */
  private static final class Attempt
      implements ClientResponseObserver<StreamRandomRequest, StreamRandomResponse> {
    final BlockingQueue<Object> events = new LinkedBlockingQueue<>();
    final long timeoutMs;
    volatile ClientCallStreamObserver<StreamRandomRequest> call;
    boolean gotMessage;

    Attempt(long timeoutMs) {
      this.timeoutMs = timeoutMs;
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<StreamRandomRequest> requestStream) {
      call = requestStream;
      requestStream.disableAutoRequestWithInitial(PREFETCH);
    }

    @Override
    public void onNext(StreamRandomResponse value) {
      events.add(value);
    }

    @Override
    public void onError(Throwable t) {
      events.add(t);
    }

    @Override
    public void onCompleted() {
      events.add(END);
    }

    void cancel(String why) {
      call.cancel(why, null);
    }
  }
}
