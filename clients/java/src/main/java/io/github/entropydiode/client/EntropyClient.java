package io.github.entropydiode.client;

import entropy.v1.Entropy.CheckQualityRequest;
import entropy.v1.Entropy.GetFloatsRequest;
import entropy.v1.Entropy.GetIntegersRequest;
import entropy.v1.Entropy.GetRandomRequest;
import entropy.v1.Entropy.GetRandomResponse;
import entropy.v1.Entropy.GetStatusRequest;
import entropy.v1.Entropy.GetUsageRequest;
import entropy.v1.Entropy.GetUuidsRequest;
import entropy.v1.EntropyServiceGrpc;
import entropy.v1.EntropyServiceGrpc.EntropyServiceBlockingStub;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.MetadataUtils;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A connection to an Entropy Diode gateway.
 *
 * <pre>{@code
 * try (EntropyClient client = EntropyClient.builder()
 *     .endpoint("127.0.0.1:50051")
 *     .apiKey(key)
 *     .build()) {
 *   byte[] bytes = client.getBytes(32);
 *   long[] dice = client.getIntegers(1, 6, 10);
 *   try (InputStream in = client.stream(1 << 30)) {
 *     in.transferTo(out);
 *   }
 * }
 * }</pre>
 *
 * <p>Every call throws a subclass of {@link EntropyException} on failure, carrying the gRPC status
 * and the server's message. Thread-safe: share one client (one HTTP/2 connection) across threads.
 */
public final class EntropyClient implements AutoCloseable {
  /** Deadline of each unary call by default. The gateway answers UNAVAILABLE after its own
   * max_wait_ms (2 s by default) when the pool runs dry, so this only bounds network trouble. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
  /** Largest message accepted: a 1 MiB GetRandom or stream chunk plus framing. */
  private static final int MAX_INBOUND_MESSAGE_BYTES = 4 << 20;

  private final ManagedChannel channel;
  private final EntropyServiceBlockingStub blocking;
  private final EntropyServiceGrpc.EntropyServiceStub async;
  private final Duration timeout;
  private final Endpoint endpoint;
  /** accept_kinds of every entropy call, as wire numbers; empty: any kind. */
  private final List<Integer> acceptKinds;
  /** construction of every entropy call, as its wire number (RAW by default). */
  private final int construction;

  private EntropyClient(Builder b, String key) {
    this.endpoint = Endpoint.parse(b.endpoint, b.caFile != null);
    ChannelCredentials credentials;
    if (!endpoint.tls()) {
      credentials = InsecureChannelCredentials.create();
    } else if (b.caFile == null) {
      credentials = TlsChannelCredentials.create();
    } else {
      try {
        credentials = TlsChannelCredentials.newBuilder().trustManager(b.caFile.toFile()).build();
      } catch (IOException e) {
        throw new IllegalArgumentException("CA file " + b.caFile + ": " + e.getMessage(), e);
      }
    }
    // Sent as call metadata on every call: the gateway never takes keys from fields or URLs.
    Metadata auth = new Metadata();
    auth.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + key);
    this.channel =
        Grpc.newChannelBuilderForAddress(endpoint.host(), endpoint.port(), credentials)
            .maxInboundMessageSize(MAX_INBOUND_MESSAGE_BYTES)
            .intercept(MetadataUtils.newAttachHeadersInterceptor(auth))
            .build();
    this.blocking = EntropyServiceGrpc.newBlockingStub(channel);
    this.async = EntropyServiceGrpc.newStub(channel);
    this.timeout = b.timeout;
    this.acceptKinds = b.acceptKinds;
    this.construction = b.construction;
  }

  /** A builder; {@link Builder#build()} needs at least an API key. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A client for {@code ENTROPY_ENDPOINT} (default {@code 127.0.0.1:50051}) with the key in
   * {@code ENTROPY_API_KEY}.
   */
  public static EntropyClient fromEnvironment() {
    return builder().build();
  }

  /** Where this client connects. */
  public Endpoint endpoint() {
    return endpoint;
  }

  /** The source kinds every entropy call of this client accepts; empty: any kind. */
  public List<SourceKind> acceptKinds() {
    return SourceKind.fromNumbers(acceptKinds);
  }

  /** How the bytes of every entropy call of this client are made ({@link Construction#RAW} by
   * default). */
  public Construction construction() {
    return Construction.fromNumber(construction);
  }

  /**
   * Exactly {@code numBytes} random bytes (1..=1048576), or an error and nothing consumed.
   *
   * @param numBytes how many bytes
   * @return the bytes
   */
  public byte[] getBytes(int numBytes) {
    return getRandom(numBytes).getData().toByteArray();
  }

  /**
   * Exactly {@code numBytes} random bytes (1..=1048576) together with their provenance: the kinds
   * of the sources behind them, the collectors and chunks they came from, and how long they had
   * waited in the pool; for a DRBG construction, the instance that made them
   * ({@link Provenance#drbg()}) and where its seeds came from.
   *
   * @param numBytes how many bytes
   * @return the bytes and their provenance
   */
  public Draw draw(int numBytes) {
    GetRandomResponse resp = getRandom(numBytes);
    return new Draw(
        resp.getData().toByteArray(), Provenance.fromProto(resp.hasProvenance(), resp.getProvenance()));
  }

  private GetRandomResponse getRandom(int numBytes) {
    GetRandomRequest req =
        GetRandomRequest.newBuilder()
            .setNumBytes(uint32("numBytes", numBytes))
            .addAllAcceptKindsValue(acceptKinds)
            .setConstructionValue(construction)
            .build();
    return call(s -> s.getRandom(req));
  }

  /**
   * {@code count} (1..=10000) uniform integers in [min, max], both inclusive, unbiased. The full
   * {@code long} range is allowed.
   *
   * @param min the smallest value
   * @param max the largest value, at least {@code min}
   * @param count how many
   * @return the integers
   */
  public long[] getIntegers(long min, long max, int count) {
    GetIntegersRequest req =
        GetIntegersRequest.newBuilder()
            .setMin(min)
            .setMax(max)
            .setCount(uint32("count", count))
            .addAllAcceptKindsValue(acceptKinds)
            .setConstructionValue(construction)
            .build();
    return call(s -> s.getIntegers(req)).getValuesList().stream().mapToLong(Long::longValue).toArray();
  }

  /**
   * {@code count} (1..=10000) uniform doubles in [0, 1), each k * 2^-53 for a random 53-bit k.
   *
   * @param count how many
   * @return the floats
   */
  public double[] getFloats(int count) {
    GetFloatsRequest req =
        GetFloatsRequest.newBuilder()
            .setCount(uint32("count", count))
            .addAllAcceptKindsValue(acceptKinds)
            .setConstructionValue(construction)
            .build();
    return call(s -> s.getFloats(req)).getValuesList().stream().mapToDouble(Double::doubleValue).toArray();
  }

  /**
   * {@code count} (1..=10000) random version 4 UUIDs.
   *
   * @param count how many
   * @return the UUIDs
   */
  public List<UUID> getUuids(int count) {
    GetUuidsRequest req =
        GetUuidsRequest.newBuilder()
            .setCount(uint32("count", count))
            .addAllAcceptKindsValue(acceptKinds)
            .setConstructionValue(construction)
            .build();
    return call(s -> s.getUuids(req)).getUuidsList().stream().map(UUID::fromString).toList();
  }

  /**
   * Has the gateway draw {@code sampleBytes} (2500..=4194304) from its pool, never to be served to
   * anyone, and report how random they look, from the source kinds this client accepts. Needs a
   * key with the {@code quality:check} scope ({@link PermissionDeniedException} otherwise); the
   * drawn bytes count against the key's byte quota. An out-of-range size is an
   * {@link InvalidArgumentException} naming {@code sample_bytes} and the bound.
   *
   * @param sampleBytes how many bytes to draw and test
   * @return the report
   */
  public QualityReport checkQuality(int sampleBytes) {
    return checkQuality(sampleBytes, acceptKinds, construction);
  }

  /**
   * {@link #checkQuality(int)} on bytes of these source kinds only, instead of the client's
   * (none: any kind).
   *
   * @param sampleBytes how many bytes to draw and test
   * @param acceptKinds QUANTUM, HARDWARE or OS
   * @return the report
   * @throws InvalidArgumentException for a null or {@link SourceKind#UNKNOWN} kind, before sending
   */
  public QualityReport checkQuality(int sampleBytes, SourceKind... acceptKinds) {
    List<Integer> kinds;
    try {
      kinds = SourceKind.toNumbers("acceptKinds", acceptKinds);
    } catch (IllegalArgumentException e) {
      throw new InvalidArgumentException(e.getMessage(), e);
    }
    return checkQuality(sampleBytes, kinds, construction);
  }

  /**
   * {@link #checkQuality(int)} on bytes made by this construction, instead of the client's: a DRBG
   * construction tests DRBG output (its report's provenance names the instance).
   *
   * @param sampleBytes how many bytes to draw and test
   * @param construction RAW, DRBG or DRBG_PREDICTION_RESISTANT
   * @return the report
   * @throws InvalidArgumentException for null or {@link Construction#UNKNOWN}, before sending
   */
  public QualityReport checkQuality(int sampleBytes, Construction construction) {
    int number;
    try {
      number = Construction.toNumber("construction", construction);
    } catch (IllegalArgumentException e) {
      throw new InvalidArgumentException(e.getMessage(), e);
    }
    return checkQuality(sampleBytes, acceptKinds, number);
  }

  private QualityReport checkQuality(int sampleBytes, List<Integer> kinds, int construction) {
    CheckQualityRequest req =
        CheckQualityRequest.newBuilder()
            .setSampleBytes(uint32("sampleBytes", sampleBytes))
            .addAllAcceptKindsValue(kinds)
            .setConstructionValue(construction)
            .build();
    return QualityReport.fromProto(call(s -> s.checkQuality(req)));
  }

  /** The gateway's pool, counters and sources. */
  public GatewayStatus status() {
    return GatewayStatus.fromProto(call(s -> s.getStatus(GetStatusRequest.getDefaultInstance())));
  }

  /**
   * This client's key's limits and what is left of each now: calls and bytes per second (with
   * when they refill), streams open, bytes drawn and not yet read. Any valid key may ask, about
   * itself only; asking costs none of it.
   */
  public KeyUsage usage() {
    return KeyUsage.fromProto(call(s -> s.getUsage(GetUsageRequest.getDefaultInstance())));
  }

  /**
   * {@code totalBytes} random bytes as an {@link java.io.InputStream} (0: endless, until closed),
   * reconnecting as {@link StreamOptions#defaults()} says.
   *
   * @param totalBytes bytes in all; 0 for no limit
   * @return the stream; close it when done
   */
  public RandomStream stream(long totalBytes) {
    return stream(totalBytes, StreamOptions.defaults());
  }

  /**
   * {@code totalBytes} random bytes as an {@link java.io.InputStream} (0: endless, until closed).
   *
   * @param totalBytes bytes in all; 0 for no limit
   * @param options message size and reconnect rule
   * @return the stream; close it when done
   */
  public RandomStream stream(long totalBytes, StreamOptions options) {
    Objects.requireNonNull(options, "options");
    return new RandomStream(
        async,
        channel,
        totalBytes,
        options,
        options.acceptKindsOr(acceptKinds),
        options.constructionOr(construction));
  }

  /** Closes the connection; calls in flight fail with CANCELLED or UNAVAILABLE. */
  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "EntropyClient(" + endpoint + ")"; // never the key
  }

  private <T> T call(Function<EntropyServiceBlockingStub, T> method) {
    EntropyServiceBlockingStub stub = blocking;
    if (!timeout.isZero()) {
      stub = stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }
    try {
      return method.apply(stub);
    } catch (StatusRuntimeException e) {
      throw EntropyException.from(e);
    }
  }

  /** A non-negative int as uint32 (a negative one cannot be encoded; every bound the gateway
   * accepts is far below Integer.MAX_VALUE, so an int parameter loses nothing). */
  private static int uint32(String field, int n) {
    if (n < 0) {
      throw new InvalidArgumentException(field + " is " + n + ", must be >= 0", null);
    }
    return n;
  }

  /** Settings for a client. Defaults come from the environment where it has them. */
  public static final class Builder {
    private String endpoint;
    private String apiKey;
    private Path caFile;
    private Duration timeout = DEFAULT_TIMEOUT;
    private List<Integer> acceptKinds = List.of();
    private int construction = Construction.RAW.number();

    private Builder() {
      String env = System.getenv("ENTROPY_ENDPOINT");
      this.endpoint = env == null || env.isEmpty() ? "127.0.0.1:" + Endpoint.DEFAULT_PORT : env;
      this.apiKey = System.getenv("ENTROPY_API_KEY");
      String ca = System.getenv("ENTROPY_CA_FILE");
      this.caFile = ca == null || ca.isEmpty() ? null : Path.of(ca);
    }

    /**
     * The gateway: {@code host:port}, {@code http://host:port} or {@code https://host:port}
     * (see {@link Endpoint}). Default: {@code ENTROPY_ENDPOINT}, else 127.0.0.1:50051.
     *
     * @param endpoint the endpoint
     * @return this builder
     */
    public Builder endpoint(String endpoint) {
      this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
      return this;
    }

    /**
     * The API key, sent as {@code authorization: Bearer KEY} on every call. Default:
     * {@code ENTROPY_API_KEY}. Checked by {@link #build()}: 1..=512 visible ASCII characters.
     *
     * @param apiKey the key
     * @return this builder
     */
    public Builder apiKey(String apiKey) {
      this.apiKey = apiKey;
      return this;
    }

    /**
     * PEM CA certificate(s) to trust for the gateway's TLS certificate, instead of the system
     * roots. A scheme-less endpoint then uses TLS, loopback too. Default: {@code ENTROPY_CA_FILE}.
     *
     * @param caFile the PEM file
     * @return this builder
     */
    public Builder caFile(Path caFile) {
      this.caFile = caFile;
      return this;
    }

    /**
     * The deadline of each unary call; {@link Duration#ZERO} for none. Default 30 s.
     *
     * @param timeout the deadline
     * @return this builder
     */
    public Builder timeout(Duration timeout) {
      if (Objects.requireNonNull(timeout, "timeout").isNegative()) {
        throw new IllegalArgumentException("timeout must not be negative");
      }
      this.timeout = timeout;
      return this;
    }

    /**
     * The source kinds every entropy call accepts ({@code getBytes}, {@code draw},
     * {@code getIntegers}, {@code getFloats}, {@code getUuids}, {@code checkQuality}, streams):
     * a chunk qualifies when every source that contributed to it has one of these kinds, so bytes
     * of a QUANTUM source XORed with the OS source need both QUANTUM and OS. None (the default)
     * accepts any kind. When the pool holds no byte of an accepted class and none arrived lately,
     * a call throws {@link FailedPreconditionException} at once, naming what the pool holds.
     * {@link StreamOptions#withAcceptKinds} and {@link EntropyClient#checkQuality(int,
     * SourceKind...)} override it for one stream or check.
     *
     * @param kinds QUANTUM, HARDWARE or OS
     * @return this builder
     * @throws IllegalArgumentException for a null or {@link SourceKind#UNKNOWN} kind
     */
    public Builder acceptKinds(SourceKind... kinds) {
      this.acceptKinds = SourceKind.toNumbers("acceptKinds", kinds);
      return this;
    }

    /**
     * How the bytes of every entropy call are made ({@code getBytes}, {@code draw},
     * {@code getIntegers}, {@code getFloats}, {@code getUuids}, {@code checkQuality}, streams):
     * {@link Construction#RAW} (the default: pool bytes, each served once) or a DRBG construction
     * (the output of a DRBG instance of the call's or stream's own, seeded from the pool, named in
     * each response's {@link Provenance#drbg()}). A DRBG construction needs the key's
     * {@code entropy:drbg} scope ({@link PermissionDeniedException} otherwise).
     * {@link StreamOptions#withConstruction} and {@link EntropyClient#checkQuality(int,
     * Construction)} override it for one stream or check; streams send it again on every
     * reconnect.
     *
     * @param construction RAW, DRBG or DRBG_PREDICTION_RESISTANT
     * @return this builder
     * @throws IllegalArgumentException for null or {@link Construction#UNKNOWN}
     */
    public Builder construction(Construction construction) {
      this.construction = Construction.toNumber("construction", construction);
      return this;
    }

    /**
     * Connects (lazily: the first call opens the connection).
     *
     * @return the client
     * @throws IllegalArgumentException for a bad endpoint, key or CA file
     */
    public EntropyClient build() {
      String key = ApiKey.validate(apiKey);
      return new EntropyClient(this, key);
    }
  }
}
