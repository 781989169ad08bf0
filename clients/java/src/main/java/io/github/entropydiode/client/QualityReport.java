package io.github.entropydiode.client;

import entropy.v1.Entropy.CheckQualityResponse;
import java.util.List;
import java.util.OptionalDouble;

/**
 * What {@link EntropyClient#checkQuality(int)} says about a sample the gateway drew from its pool
 * (and never served to anyone): ent's statistics, an SP 800-90B min-entropy estimate, the FIPS
 * 140-2 block tests, and one verdict.
 *
 * @param sampleBytes bytes tested
 * @param provenance where they came from (null only from a gateway that sends none)
 * @param shannonEntropyBitsPerByte Shannon entropy, bits per byte (8 is the most)
 * @param minEntropyBitsPerByte NIST SP 800-90B 6.3.1 most-common-value estimate, bits per byte
 * @param chiSquare chi-square over the 256 byte values (255 degrees of freedom)
 * @param chiSquarePValue its upper-tail p-value
 * @param mean arithmetic mean of the bytes (127.5 for uniform bytes)
 * @param serialCorrelation serial correlation of successive bytes (0 for independent bytes);
 *     empty when undefined (every byte equal)
 * @param pi Monte Carlo pi from the sample (24-bit coordinate pairs)
 * @param piOsReference the same test on as many bytes of the gateway's OS CSPRNG, for comparison
 * @param fips1402 the FIPS 140-2 tests over each whole 20,000-bit block
 * @param passed true when every check passed
 * @param failures one line per failed check, naming the statistic, its value and its bound
 * @param thresholds the checks and their bounds for this sample size, one line each
 */
public record QualityReport(
    long sampleBytes,
    Provenance provenance,
    double shannonEntropyBitsPerByte,
    double minEntropyBitsPerByte,
    double chiSquare,
    double chiSquarePValue,
    double mean,
    OptionalDouble serialCorrelation,
    MonteCarloPi pi,
    MonteCarloPi piOsReference,
    Fips1402 fips1402,
    boolean passed,
    List<String> failures,
    List<String> thresholds) {

  /**
   * A Monte Carlo estimate of pi.
   *
   * @param estimate the estimate
   * @param error the estimate minus pi
   * @param standardError the standard error of the estimate for this many points
   * @param points how many points
   */
  public record MonteCarloPi(double estimate, double error, double standardError, long points) {
    static MonteCarloPi fromProto(entropy.v1.Entropy.MonteCarloPi m) {
      return new MonteCarloPi(m.getEstimate(), m.getError(), m.getStandardError(), m.getPoints());
    }
  }

  /**
   * FIPS 140-2 block tests: blocks tested and how many failed each test.
   *
   * @param blocks whole 20,000-bit blocks tested
   * @param monobitFailures blocks that failed the monobit test
   * @param pokerFailures blocks that failed the poker test
   * @param runsFailures blocks that failed the runs test
   * @param longRunFailures blocks that failed the long-run test
   * @param blocksFailed blocks that failed any of the four
   */
  public record Fips1402(
      long blocks,
      long monobitFailures,
      long pokerFailures,
      long runsFailures,
      long longRunFailures,
      long blocksFailed) {
    static Fips1402 fromProto(entropy.v1.Entropy.Fips1402 m) {
      return new Fips1402(
          m.getBlocks(),
          m.getMonobitFailures(),
          m.getPokerFailures(),
          m.getRunsFailures(),
          m.getLongRunFailures(),
          m.getBlocksFailed());
    }
  }

  static QualityReport fromProto(CheckQualityResponse m) {
    return new QualityReport(
        m.getSampleBytes(),
        Provenance.fromProto(m.hasProvenance(), m.getProvenance()),
        m.getShannonEntropyBitsPerByte(),
        m.getMinEntropyBitsPerByte(),
        m.getChiSquare(),
        m.getChiSquarePValue(),
        m.getMean(),
        m.hasSerialCorrelation()
            ? OptionalDouble.of(m.getSerialCorrelation())
            : OptionalDouble.empty(),
        MonteCarloPi.fromProto(m.getPi()),
        MonteCarloPi.fromProto(m.getPiOsReference()),
        Fips1402.fromProto(m.getFips1402()),
        m.getPassed(),
        List.copyOf(m.getFailuresList()),
        List.copyOf(m.getThresholdsList()));
  }
}
