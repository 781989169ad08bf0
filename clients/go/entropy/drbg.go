// Constructions (raw pool bytes or DRBG output) and the label of the DRBG instance that made a
// response's bytes, as plain Go types.

package entropy

import (
	"fmt"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// Construction is how a response's bytes are made. Pass it to WithConstruction or
// WithStreamConstruction; Provenance.Construction says which one a response got.
type Construction int32

const (
	// ConstructionUnspecified asks for ConstructionRaw; in a provenance it means a gateway too
	// old to say.
	ConstructionUnspecified = Construction(entropyv1.Construction_CONSTRUCTION_UNSPECIFIED)
	// ConstructionRaw: bytes of the pool as the collectors delivered them, each served to one
	// caller, once. The default, forever.
	ConstructionRaw = Construction(entropyv1.Construction_CONSTRUCTION_RAW)
	// ConstructionDRBG: the output of an SP 800-90A CTR_DRBG (AES-256, 256-bit strength)
	// instance of the call's own (one per unary call, one per stream), seeded and reseeded only
	// with pool bytes drawn for the caller. Far more bytes than the sources make, but
	// computationally rather than physically random (docs/security.md, "DRBG output"). Needs
	// the key's `entropy:drbg` scope.
	ConstructionDRBG = Construction(entropyv1.Construction_CONSTRUCTION_DRBG)
	// ConstructionDRBGPredictionResistant: as ConstructionDRBG, reseeded from the pool before
	// every 64 KiB of output.
	ConstructionDRBGPredictionResistant = Construction(entropyv1.Construction_CONSTRUCTION_DRBG_PREDICTION_RESISTANT)
)

// String is "raw", "drbg" or "drbg_prediction_resistant"; "unspecified" for 0, and the number
// for a construction this client does not know.
func (c Construction) String() string {
	if _, known := entropyv1.Construction_name[int32(c)]; !known {
		return fmt.Sprint(int32(c))
	}
	return label(entropyv1.Construction(c).String(), "CONSTRUCTION_")
}

// DRBGMechanism is an SP 800-90A DRBG mechanism.
type DRBGMechanism int32

// MechanismCTRDRBGAES256 is CTR_DRBG (SP 800-90A Rev. 1 section 10.2.1) with AES-256 and the
// derivation function.
const MechanismCTRDRBGAES256 = DRBGMechanism(entropyv1.DrbgMechanism_DRBG_MECHANISM_CTR_DRBG_AES_256)

// String is "ctr_drbg_aes_256", or the number for a mechanism this client does not know.
func (m DRBGMechanism) String() string {
	if _, known := entropyv1.DrbgMechanism_name[int32(m)]; !known {
		return fmt.Sprint(int32(m))
	}
	return label(entropyv1.DrbgMechanism(m).String(), "DRBG_MECHANISM_")
}

// DRBGLabel is the DRBG instance that made a response's bytes (Provenance.DRBG).
type DRBGLabel struct {
	Mechanism DRBGMechanism
	// SecurityStrengthBits is the instance's security strength (256).
	SecurityStrengthBits uint32
	// InstanceID is opaque: 32 hex digits, fresh for every instance. Every message of one
	// stream carries the same; every unary call has an instance of its own.
	InstanceID string
	// ReseedCount is the reseeds since the instance was instantiated (0: seeded once).
	ReseedCount uint64
	// BytesSinceReseed is what the instance produced since it was last seeded, before this
	// response's bytes.
	BytesSinceReseed uint64
	// SeedBytes is the pool bytes drawn to seed the instance so far (instantiation and every
	// reseed), none of them served to anyone.
	SeedBytes uint64
	// PredictionResistance is true when the instance reseeds before every generate request.
	PredictionResistance bool
}

// drbgFromPB converts a provenance's DRBG label; nil for RAW output.
func drbgFromPB(m *entropyv1.DrbgLabel) *DRBGLabel {
	if m == nil {
		return nil
	}
	return &DRBGLabel{
		Mechanism:            DRBGMechanism(m.GetMechanism()),
		SecurityStrengthBits: m.GetSecurityStrengthBits(),
		InstanceID:           m.GetInstanceId(),
		ReseedCount:          m.GetReseedCount(),
		BytesSinceReseed:     m.GetBytesSinceReseed(),
		SeedBytes:            m.GetSeedBytes(),
		PredictionResistance: m.GetPredictionResistance(),
	}
}
