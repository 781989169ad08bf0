package entropy_test

import (
	"context"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// DRBG constructions: what the client sends (against a scripted server), and against the live
// dev gateway (its key has entropy:drbg; one OS source, collector "dev-collector") that a call
// or stream asking for DRBG output gets it, labelled with an instance of its own, that one not
// asking never does, and that a reader asks again on every reconnect; the scope on a gateway
// with a keys file.

func TestConstructionNames(t *testing.T) {
	for c, want := range map[entropy.Construction]string{
		entropy.ConstructionUnspecified: "unspecified", entropy.ConstructionRaw: "raw",
		entropy.ConstructionDRBG: "drbg", entropy.ConstructionDRBGPredictionResistant: "drbg_prediction_resistant",
		42: "42",
	} {
		if c.String() != want {
			t.Fatalf("Construction(%d).String() = %q, want %q", int32(c), c.String(), want)
		}
	}
	if entropy.ConstructionRaw != 1 || entropy.ConstructionDRBG != 2 || entropy.ConstructionDRBGPredictionResistant != 3 {
		t.Fatal("the constants must be the proto's values")
	}
	if m := entropy.MechanismCTRDRBGAES256; m != 1 || m.String() != "ctr_drbg_aes_256" {
		t.Fatalf("MechanismCTRDRBGAES256 = %d %q", int32(m), m.String())
	}
}

func TestConstructionIsSentOnEveryEntropyCallAndStream(t *testing.T) {
	f := &fakeEntropy{chunkSize: 100, quality: &entropyv1.CheckQualityResponse{},
		script: []step{{1, codes.Unavailable, false}}}
	addr := serveFake(t, f)
	plain := newClient(t, addr, "k")
	if plain.Construction() != entropy.ConstructionRaw {
		t.Fatalf("default Construction() = %v, want raw", plain.Construction())
	}
	c, err := entropy.New(addr, "k", entropy.WithConstruction(entropy.ConstructionDRBG))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Construction() != entropy.ConstructionDRBG {
		t.Fatalf("Construction() = %v, want drbg", c.Construction())
	}
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(plain.Bytes(ctx, 8))
	must(c.Bytes(ctx, 8))
	must(c.Draw(ctx, 8))
	must(c.Integers(ctx, 1, 6, 2))
	must(c.Floats(ctx, 2))
	must(c.UUIDs(ctx, 2))
	must(c.CheckQuality(ctx, 2500))
	// A reader: the first stream fails after one message; the reconnect asks for DRBG again.
	r := c.NewReader(ctx, 300, 100)
	must(io.ReadAll(r))
	r.Close()
	if r.StreamsOpened() != 2 {
		t.Fatalf("%d streams, want 2 (one reconnect)", r.StreamsOpened())
	}
	// A reader's own construction wins over the client's.
	r = c.NewReader(ctx, 100, 100, entropy.WithStreamConstruction(entropy.ConstructionDRBGPredictionResistant))
	must(io.ReadAll(r))
	r.Close()
	r = plain.NewReader(ctx, 100, 100, entropy.WithStreamConstruction(entropy.ConstructionDRBG))
	must(io.ReadAll(r))
	r.Close()
	const raw, drbg = "CONSTRUCTION_RAW", "CONSTRUCTION_DRBG"
	want := []string{
		"GetRandom:" + raw, "GetRandom:" + drbg, "GetRandom:" + drbg, "GetIntegers:" + drbg,
		"GetFloats:" + drbg, "GetUuids:" + drbg, "CheckQuality:" + drbg,
		"StreamRandom:" + drbg, "StreamRandom:" + drbg,
		"StreamRandom:CONSTRUCTION_DRBG_PREDICTION_RESISTANT", "StreamRandom:" + drbg,
	}
	if got := f.constructionsSeen(); !reflect.DeepEqual(got, want) {
		t.Fatalf("construction sent:\n got %v\nwant %v", got, want)
	}
}

func TestTheDRBGLabelIsConverted(t *testing.T) {
	p := proto.Clone(scriptedProvenance).(*entropyv1.DrawProvenance)
	p.Construction = entropyv1.Construction_CONSTRUCTION_DRBG_PREDICTION_RESISTANT
	p.Drbg = &entropyv1.DrbgLabel{
		Mechanism: entropyv1.DrbgMechanism_DRBG_MECHANISM_CTR_DRBG_AES_256, SecurityStrengthBits: 256,
		InstanceId: "00112233445566778899aabbccddeeff", ReseedCount: 3, BytesSinceReseed: 4096,
		SeedBytes: 144, PredictionResistance: true,
	}
	d, err := newClient(t, serveFake(t, &fakeEntropy{provenance: p}), "k").Draw(context.Background(), 16)
	if err != nil {
		t.Fatal(err)
	}
	want := *wantProvenance
	want.Construction = entropy.ConstructionDRBGPredictionResistant
	want.DRBG = &entropy.DRBGLabel{
		Mechanism: entropy.MechanismCTRDRBGAES256, SecurityStrengthBits: 256,
		InstanceID: "00112233445566778899aabbccddeeff", ReseedCount: 3, BytesSinceReseed: 4096,
		SeedBytes: 144, PredictionResistance: true,
	}
	if !reflect.DeepEqual(d.Provenance, &want) {
		t.Fatalf("provenance\n got %+v (drbg %+v)\nwant %+v (drbg %+v)", d.Provenance, d.Provenance.DRBG, &want, want.DRBG)
	}
}

var instanceID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// drbgInstance checks that p labels DRBG output (construction c) whose seeds came from the dev
// collector, and returns its instance id.
func drbgInstance(t *testing.T, p *entropy.Provenance, c entropy.Construction) string {
	t.Helper()
	if p == nil || p.Construction != c || p.DRBG == nil {
		t.Fatalf("want %v output with a DRBG label, got %+v", c, p)
	}
	l := p.DRBG
	if l.Mechanism != entropy.MechanismCTRDRBGAES256 || l.SecurityStrengthBits != 256 || !instanceID.MatchString(l.InstanceID) {
		t.Fatalf("label %+v: want CTR_DRBG AES-256, 256 bits, a 32-hex-digit instance id", l)
	}
	if l.PredictionResistance != (c == entropy.ConstructionDRBGPredictionResistant) || l.SeedBytes < 48 {
		t.Fatalf("label %+v: prediction resistance or seed bytes (instantiated from 48) wrong for %v", l, c)
	}
	// The seeds' provenance, like any draw's.
	if !reflect.DeepEqual(p.Kinds, onlyOS) || !reflect.DeepEqual(p.CollectorIDs, []string{devCollector}) || p.ChunkCount == 0 {
		t.Fatalf("seeds' provenance %+v: want the dev collector's OS chunks", p)
	}
	return l.InstanceID
}

func TestADRBGDrawIsLabelledWithAnInstanceOfItsOwn(t *testing.T) {
	c := liveClientWith(t, entropy.WithConstruction(entropy.ConstructionDRBG))
	ctx := context.Background()
	seen := map[string]bool{}
	var all []byte
	for i := 0; i < 4; i++ {
		d, err := c.Draw(ctx, 4096)
		if err != nil {
			t.Fatal(err)
		}
		id := drbgInstance(t, d.Provenance, entropy.ConstructionDRBG)
		if seen[id] {
			t.Fatalf("instance %s served two unary calls", id)
		}
		seen[id] = true
		if l := d.Provenance.DRBG; l.ReseedCount != 0 || l.BytesSinceReseed != 0 || l.SeedBytes != 48 {
			t.Fatalf("a fresh instance: %+v", l)
		}
		all = append(all, d.Data...)
	}
	noRepeatedBlocks(t, all)
	// The client's construction applies to CheckQuality too: the sample is DRBG output.
	r, err := c.CheckQuality(ctx, 100_000)
	if err != nil || !r.Passed {
		t.Fatalf("CheckQuality of DRBG output: %v %+v", err, r)
	}
	drbgInstance(t, r.Provenance, entropy.ConstructionDRBG)
	// And every other entropy call is served.
	if _, err := c.Integers(ctx, 1, 6, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Floats(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UUIDs(ctx, 10); err != nil {
		t.Fatal(err)
	}
}

func TestADefaultCallIsRawAndUnlabelled(t *testing.T) {
	c := liveClient(t)
	d, err := c.Draw(context.Background(), 32)
	if err != nil {
		t.Fatal(err)
	}
	if p := d.Provenance; p == nil || p.Construction != entropy.ConstructionRaw || p.DRBG != nil {
		t.Fatalf("a default draw: want raw without a label, got %+v", p)
	}
	r := c.NewReader(context.Background(), 100_000, 16384)
	defer r.Close()
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if p := r.Provenance(); p == nil || p.Construction != entropy.ConstructionRaw || p.DRBG != nil {
		t.Fatalf("a default stream: want raw without a label, got %+v", p)
	}
}

func TestAPredictionResistantDrawReseedsFromThePool(t *testing.T) {
	c := liveClientWith(t, entropy.WithConstruction(entropy.ConstructionDRBGPredictionResistant))
	d, err := c.Draw(context.Background(), 100_000) // two generate requests of at most 64 KiB
	if err != nil {
		t.Fatal(err)
	}
	drbgInstance(t, d.Provenance, entropy.ConstructionDRBGPredictionResistant)
	if d.Provenance.DRBG.ReseedCount == 0 {
		t.Fatalf("want a reseed before the second 64 KiB, got %+v", d.Provenance.DRBG)
	}
}

func TestEveryMessageOfADRBGStreamNamesItsOneInstance(t *testing.T) {
	// A raw client: the reader's own construction asks for DRBG.
	r := liveClient(t).NewReader(context.Background(), mib, 64<<10,
		entropy.WithStreamConstruction(entropy.ConstructionDRBG))
	defer r.Close()
	buf := make([]byte, mib)
	var instance string
	var made uint64
	messages := 0
	for {
		n, err := r.Read(buf) // one message per read (a Reader takes one only when it needs one)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		id := drbgInstance(t, r.Provenance(), entropy.ConstructionDRBG)
		if instance == "" {
			instance = id
		} else if id != instance {
			t.Fatalf("message %d names instance %s, the stream's first named %s", messages, id, instance)
		}
		// Each message says how much its instance made before it (no reseed within 1 MiB).
		if l := r.Provenance().DRBG; l.BytesSinceReseed != made || l.ReseedCount != 0 {
			t.Fatalf("message %d: label %+v, want %d bytes since the seeding", messages, l, made)
		}
		made += uint64(n)
		messages++
	}
	if made != mib || messages < 16 {
		t.Fatalf("%d bytes in %d messages, want 1 MiB in 16 or more", made, messages)
	}
}

func TestADRBGReaderKeepsAskingForDRBGAcrossAReconnect(t *testing.T) {
	const total = 4 * mib
	// The first connection carries at most 2 MiB, so the stream cannot finish before the cut.
	proxy := newCutProxy(t, target, 2*mib)
	c, err := entropy.New(proxy.addr, apiKey, entropy.WithInsecure(), entropy.WithConstruction(entropy.ConstructionDRBG))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.NewReader(context.Background(), total, 64<<10)
	defer r.Close()
	first := make([]byte, mib)
	if _, err := io.ReadFull(r, first); err != nil {
		t.Fatal(err)
	}
	before := drbgInstance(t, r.Provenance(), entropy.ConstructionDRBG)
	proxy.cut()
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("after the cut: %v (streams opened %d)", err, r.StreamsOpened())
	}
	after := drbgInstance(t, r.Provenance(), entropy.ConstructionDRBG)
	if r.StreamsOpened() < 2 || proxy.connectionCount() < 2 {
		t.Fatalf("the cut should have forced a new stream: %d streams, %d connections",
			r.StreamsOpened(), proxy.connectionCount())
	}
	if after == before {
		t.Fatalf("the new stream should have a new instance, both are %s", after)
	}
	all := append(first, rest...)
	if len(all) != total {
		t.Fatalf("read %d bytes, want %d", len(all), total)
	}
	noRepeatedBlocks(t, all)
}

func TestAnUnknownConstructionIsInvalidArgumentNamingIt(t *testing.T) {
	ctx := context.Background()
	for _, bad := range []entropy.Construction{-1, 4, 99} {
		c := liveClientWith(t, entropy.WithConstruction(bad))
		_, err1 := c.Bytes(ctx, 8)
		_, err2 := c.Integers(ctx, 1, 6, 1)
		_, err3 := c.CheckQuality(ctx, 2500)
		_, err4 := c.NewReader(ctx, 100, 0).Read(make([]byte, 100))
		_, err5 := liveClient(t).NewReader(ctx, 100, 0, entropy.WithStreamConstruction(bad)).Read(make([]byte, 100))
		for i, err := range []error{err1, err2, err3, err4, err5} {
			if !errors.Is(err, entropy.ErrInvalidArgument) || !strings.Contains(err.Error(), "construction") {
				t.Fatalf("construction %d, call %d: want InvalidArgument naming construction, got %v", int32(bad), i, err)
			}
		}
	}
}

// TestADRBGConstructionNeedsItsScope runs a gateway from a keys file (nothing feeds it, which
// the scope check does not need) with a key of the default scopes and one that lists
// entropy:drbg.
func TestADRBGConstructionNeedsItsScope(t *testing.T) {
	if gatewayBin == "" {
		t.Skip("needs GATEWAY_BIN (the tests use an external gateway)")
	}
	addr, keys := startKeyedGateway(t, map[string]string{
		"plain": "",
		"drbg":  `scopes = ["entropy:read", "status:read", "entropy:drbg"]`,
	})
	ctx := context.Background()
	c, err := entropy.New(addr, keys["plain"], entropy.WithInsecure(), entropy.WithConstruction(entropy.ConstructionDRBG))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err1 := c.Bytes(ctx, 8)
	_, err2 := c.Draw(ctx, 8)
	_, err3 := c.UUIDs(ctx, 1)
	// A reader does not retry the refusal (a budget of 0 would retry forever).
	r := newClient(t, addr, keys["plain"]).NewReader(ctx, 0, 1024,
		entropy.WithStreamConstruction(entropy.ConstructionDRBGPredictionResistant), entropy.WithReconnectBudget(0))
	defer r.Close()
	_, err4 := r.Read(make([]byte, 1))
	for i, err := range []error{err1, err2, err3, err4} {
		if !errors.Is(err, entropy.ErrPermissionDenied) || !strings.Contains(err.Error(), "entropy:drbg") {
			t.Fatalf("call %d: want PermissionDenied naming entropy:drbg, got %v", i, err)
		}
	}
	if r.StreamsOpened() != 1 {
		t.Fatalf("the reader opened %d streams, want 1", r.StreamsOpened())
	}
	// The scoped key gets past the scope check: an empty pool then answers with something else.
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	d, err := entropy.New(addr, keys["drbg"], entropy.WithInsecure(), entropy.WithConstruction(entropy.ConstructionDRBG))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Bytes(short, 8); err == nil || errors.Is(err, entropy.ErrPermissionDenied) {
		t.Fatalf("key with entropy:drbg on an empty pool: want an error other than PermissionDenied, got %v", err)
	}
}
