// CheckQuality as plain Go types: the gateway draws a sample, tests it and reports.

package entropy

import (
	"context"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// QualityReport is what CheckQuality says about a sample drawn from the pool (and never served
// to anyone): ent's statistics, an SP 800-90B min-entropy estimate, the FIPS 140-2 block tests,
// and one verdict.
type QualityReport struct {
	// SampleBytes is how many bytes were tested.
	SampleBytes uint64
	// Provenance is where they came from (nil only from a gateway that sent none).
	Provenance *Provenance
	// ShannonEntropyBitsPerByte is the Shannon entropy (8 is the most).
	ShannonEntropyBitsPerByte float64
	// MinEntropyBitsPerByte is the NIST SP 800-90B 6.3.1 most-common-value estimate.
	MinEntropyBitsPerByte float64
	// ChiSquare over the 256 byte values (255 degrees of freedom), and its upper-tail p-value.
	ChiSquare       float64
	ChiSquarePValue float64
	// Mean of the bytes (127.5 for uniform bytes).
	Mean float64
	// SerialCorrelation of successive bytes (0 for independent bytes); nil when undefined
	// (every byte equal).
	SerialCorrelation *float64
	// Pi is the Monte Carlo estimate of pi from the sample (24-bit coordinate pairs), and
	// PiOSReference the same test on as many bytes of the gateway's OS CSPRNG, for comparison.
	Pi            MonteCarloPi
	PiOSReference MonteCarloPi
	// FIPS140_2 is the FIPS 140-2 tests over each whole 20,000-bit block.
	FIPS140_2 FIPS140_2
	// Passed is true when every check passed.
	Passed bool
	// Failures has one line per failed check, naming the statistic, its value and its bound.
	Failures []string
	// Thresholds has the checks and their bounds for this sample size, one line each.
	Thresholds []string
}

// MonteCarloPi is a Monte Carlo estimate of pi.
type MonteCarloPi struct {
	Estimate float64
	// Error is Estimate minus pi.
	Error float64
	// StandardError of the estimate for this many points.
	StandardError float64
	Points        uint64
}

// FIPS140_2 is the FIPS 140-2 block tests: blocks tested and how many failed each test.
type FIPS140_2 struct {
	Blocks          uint64
	MonobitFailures uint64
	PokerFailures   uint64
	RunsFailures    uint64
	LongRunFailures uint64
	// BlocksFailed is the blocks that failed any of the four.
	BlocksFailed uint64
}

// CheckQuality has the gateway draw sampleBytes (2500..=4194304) from its pool, never to be
// served to anyone, and report how random they look. kinds, when given, are the source kinds
// the sample may come from (instead of the client's WithAcceptKinds); the client's
// WithConstruction applies (a DRBG construction tests DRBG output). It needs a key with the
// `quality:check` scope (ErrPermissionDenied otherwise), and the drawn bytes count against the
// key's byte quota. An out-of-range size is ErrInvalidArgument naming `sample_bytes` and the
// bound.
func (c *Client) CheckQuality(ctx context.Context, sampleBytes int, kinds ...SourceKind) (*QualityReport, error) {
	n, err := toUint32("sample_bytes", sampleBytes)
	if err != nil {
		return nil, err
	}
	accept := c.acceptKinds
	if len(kinds) > 0 {
		accept = kindsToPB(kinds)
	}
	resp, err := unary(c, ctx, c.rpc.CheckQuality, &entropyv1.CheckQualityRequest{
		SampleBytes: n, AcceptKinds: accept, Construction: c.construction,
	})
	if err != nil {
		return nil, err
	}
	return qualityFromPB(resp), nil
}

func qualityFromPB(m *entropyv1.CheckQualityResponse) *QualityReport {
	r := &QualityReport{
		SampleBytes:               m.GetSampleBytes(),
		Provenance:                provenanceFromPB(m.GetProvenance()),
		ShannonEntropyBitsPerByte: m.GetShannonEntropyBitsPerByte(),
		MinEntropyBitsPerByte:     m.GetMinEntropyBitsPerByte(),
		ChiSquare:                 m.GetChiSquare(),
		ChiSquarePValue:           m.GetChiSquarePValue(),
		Mean:                      m.GetMean(),
		Pi:                        piFromPB(m.GetPi()),
		PiOSReference:             piFromPB(m.GetPiOsReference()),
		Passed:                    m.GetPassed(),
		Failures:                  append([]string(nil), m.GetFailures()...),
		Thresholds:                append([]string(nil), m.GetThresholds()...),
	}
	if m.SerialCorrelation != nil {
		v := m.GetSerialCorrelation()
		r.SerialCorrelation = &v
	}
	f := m.GetFips140_2()
	r.FIPS140_2 = FIPS140_2{
		Blocks:          f.GetBlocks(),
		MonobitFailures: f.GetMonobitFailures(),
		PokerFailures:   f.GetPokerFailures(),
		RunsFailures:    f.GetRunsFailures(),
		LongRunFailures: f.GetLongRunFailures(),
		BlocksFailed:    f.GetBlocksFailed(),
	}
	return r
}

func piFromPB(m *entropyv1.MonteCarloPi) MonteCarloPi {
	return MonteCarloPi{
		Estimate:      m.GetEstimate(),
		Error:         m.GetError(),
		StandardError: m.GetStandardError(),
		Points:        m.GetPoints(),
	}
}
