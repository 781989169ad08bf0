// GetStatus as plain Go types, so callers never handle generated messages.

package entropy

import (
	"strings"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// Status is a snapshot of the gateway (GetStatus).
type Status struct {
	PoolBytes             uint64
	PoolCapacityBytes     uint64
	PoolLowWatermarkBytes uint64
	Waiters               uint64
	IngestedBytesTotal    uint64
	ServedBytesTotal      uint64
	ChunksAcceptedTotal   uint64
	ChunksRejectedTotal   uint64
	// ChunksDeferredTotal counts chunks refused only because the pool was full (resent later).
	ChunksDeferredTotal uint64
	UptimeMs            uint64
	// LastChunkAgeMs is nil when no chunk has been accepted yet.
	LastChunkAgeMs *uint64
	Sources        []Source
	Serving        bool
	// PoolByClass is the pool's bytes by class (the kinds of the sources behind them), largest
	// first.
	PoolByClass []ClassLevel
	// ExpiredBytesTotal counts bytes wiped unserved because they stayed in the pool longer
	// than MaxByteAgeMs.
	ExpiredBytesTotal uint64
	// MaxByteAgeMs is the longest a byte may stay in the pool, in milliseconds; 0: no limit.
	MaxByteAgeMs uint64
}

// ClassLevel is the pool's bytes of one class.
type ClassLevel struct {
	// Kinds of the sources behind these bytes, each once, in enum order.
	Kinds []SourceKind
	// Bytes ready to be served.
	Bytes uint64
}

// Source is one entropy source the gateway has seen. Kind is "quantum", "hardware" or "os":
// only "quantum" sources are quantum, and the others are labelled as what they are.
type Source struct {
	CollectorID           string
	Name                  string
	Kind                  string
	Health                string
	ContributedBytesTotal uint64
	LastReportAgeMs       uint64
	LastMixing            string
}

func statusFromPB(m *entropyv1.GetStatusResponse) *Status {
	s := &Status{
		PoolBytes:             m.GetPoolBytes(),
		PoolCapacityBytes:     m.GetPoolCapacityBytes(),
		PoolLowWatermarkBytes: m.GetPoolLowWatermarkBytes(),
		Waiters:               m.GetWaiters(),
		IngestedBytesTotal:    m.GetIngestedBytesTotal(),
		ServedBytesTotal:      m.GetServedBytesTotal(),
		ChunksAcceptedTotal:   m.GetChunksAcceptedTotal(),
		ChunksRejectedTotal:   m.GetChunksRejectedTotal(),
		ChunksDeferredTotal:   m.GetChunksDeferredTotal(),
		UptimeMs:              m.GetUptimeMs(),
		LastChunkAgeMs:        m.LastChunkAgeMs,
		Serving:               m.GetServing(),
		ExpiredBytesTotal:     m.GetExpiredBytesTotal(),
		MaxByteAgeMs:          m.GetMaxByteAgeMs(),
	}
	for _, cl := range m.GetPoolByClass() {
		s.PoolByClass = append(s.PoolByClass, ClassLevel{Kinds: kindsFromPB(cl.GetKinds()), Bytes: cl.GetBytes()})
	}
	for _, src := range m.GetSources() {
		s.Sources = append(s.Sources, Source{
			CollectorID:           src.GetCollectorId(),
			Name:                  src.GetName(),
			Kind:                  label(src.GetKind().String(), "SOURCE_KIND_"),
			Health:                label(src.GetHealth().String(), "SOURCE_HEALTH_"),
			ContributedBytesTotal: src.GetContributedBytesTotal(),
			LastReportAgeMs:       src.GetLastReportAgeMs(),
			LastMixing:            label(src.GetLastMixing().String(), "MIXING_"),
		})
	}
	return s
}

// label turns SOURCE_KIND_QUANTUM into "quantum". An enum value this client does not know
// prints as its number, which stays visible as such.
func label(name, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(name, prefix))
}
