// Source kinds, the accept_kinds filter, and where served bytes came from (DrawProvenance) as
// plain Go types.

package entropy

import (
	"fmt"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// SourceKind is what kind of physical process an entropy source draws on. Only KindQuantum is
// quantum; the others are labelled as what they are.
type SourceKind int32

// The source kinds a gateway knows. Pass them to WithAcceptKinds, WithStreamAcceptKinds or
// CheckQuality to accept only bytes from sources of those kinds.
const (
	// KindQuantum: a quantum random number generator (an ID Quantique Quantis, ...).
	KindQuantum SourceKind = SourceKind(entropyv1.SourceKind_SOURCE_KIND_QUANTUM)
	// KindHardware: a non-quantum hardware noise source (/dev/hwrng: a TPM, a virtio RNG).
	KindHardware SourceKind = SourceKind(entropyv1.SourceKind_SOURCE_KIND_HARDWARE)
	// KindOS: the operating system's CSPRNG (getrandom). Not quantum.
	KindOS SourceKind = SourceKind(entropyv1.SourceKind_SOURCE_KIND_OS)
)

// String is "quantum", "hardware" or "os"; "unspecified" for 0, and the number for a kind this
// client does not know (a newer gateway's).
func (k SourceKind) String() string {
	if _, known := entropyv1.SourceKind_name[int32(k)]; !known {
		return fmt.Sprint(int32(k))
	}
	return label(entropyv1.SourceKind(k).String(), "SOURCE_KIND_")
}

// kindsToPB converts an accept_kinds list as given: empty stays empty (accept any), and no
// value is dropped or checked here, so the gateway's answer (INVALID_ARGUMENT naming
// `accept_kinds[i]` for 0 or an unknown value) reaches the caller.
func kindsToPB(kinds []SourceKind) []entropyv1.SourceKind {
	if len(kinds) == 0 {
		return nil
	}
	out := make([]entropyv1.SourceKind, len(kinds))
	for i, k := range kinds {
		out[i] = entropyv1.SourceKind(k)
	}
	return out
}

func kindsFromPB(kinds []entropyv1.SourceKind) []SourceKind {
	if len(kinds) == 0 {
		return nil
	}
	out := make([]SourceKind, len(kinds))
	for i, k := range kinds {
		out[i] = SourceKind(k)
	}
	return out
}

// Provenance is where the bytes of one response came from. A response's bytes come from chunks
// of one class: chunks whose contributing sources have the same set of kinds.
type Provenance struct {
	// Kinds of the sources that contributed to these bytes, each once, in enum order: one for
	// a single-kind source or mix, two or three when a collector mixed kinds (a QUANTUM source
	// XORed with the OS source reports KindQuantum and KindOS).
	Kinds []SourceKind
	// Mixed is true when any of the chunks mixed two or more sources (XOR or HKDF).
	Mixed bool
	// CollectorIDs are the collectors whose chunks these bytes came from, each once, in the
	// order first served.
	CollectorIDs []string
	// FirstChunk is the chunk the first byte came from, LastChunk the one the last byte came
	// from (the same when there was one).
	FirstChunk ChunkRef
	LastChunk  ChunkRef
	// ChunkCount is how many chunks the bytes came from.
	ChunkCount uint32
	// OldestByteAgeMs is how long the oldest of these bytes had been in the gateway's pool.
	OldestByteAgeMs uint64
	// Construction is how the bytes were made: ConstructionRaw (pool bytes), or
	// ConstructionDRBG / ConstructionDRBGPredictionResistant: the output of the DRBG instance
	// DRBG, whose seeds the fields above describe (ConstructionUnspecified from a gateway too
	// old to say).
	Construction Construction
	// DRBG is the instance that made the bytes; nil for raw pool bytes.
	DRBG *DRBGLabel
}

// ChunkRef is one chunk, as its collector signed it.
type ChunkRef struct {
	CollectorID string
	// Epoch is the collector's run (a fresh random number each start).
	Epoch uint64
	// Sequence is the chunk's number within that run.
	Sequence uint64
	// SignedAtUnixMs is when the collector signed it (Unix milliseconds, the collector's clock).
	SignedAtUnixMs int64
}

// provenanceFromPB converts a response's provenance; nil when the response carried none (a
// gateway older than provenance).
func provenanceFromPB(m *entropyv1.DrawProvenance) *Provenance {
	if m == nil {
		return nil
	}
	return &Provenance{
		Kinds:           kindsFromPB(m.GetKinds()),
		Mixed:           m.GetMixed(),
		CollectorIDs:    append([]string(nil), m.GetCollectorIds()...),
		FirstChunk:      chunkRefFromPB(m.GetFirstChunk()),
		LastChunk:       chunkRefFromPB(m.GetLastChunk()),
		ChunkCount:      m.GetChunkCount(),
		OldestByteAgeMs: m.GetOldestByteAgeMs(),
		Construction:    Construction(m.GetConstruction()),
		DRBG:            drbgFromPB(m.GetDrbg()),
	}
}

func chunkRefFromPB(m *entropyv1.ChunkRef) ChunkRef {
	return ChunkRef{
		CollectorID:    m.GetCollectorId(),
		Epoch:          m.GetEpoch(),
		Sequence:       m.GetSequence(),
		SignedAtUnixMs: m.GetSignedAtUnixMs(),
	}
}

// Draw is random bytes together with where they came from (Client.Draw).
type Draw struct {
	Data []byte
	// Provenance is nil only when the gateway sent none (one older than provenance).
	Provenance *Provenance
}
