// Provenance draws 32 bytes with where they came from, then has the gateway check the quality
// of a 64 KiB sample. ACCEPT_KINDS (e.g. "quantum" or "quantum,os") accepts only those source
// kinds; a gateway that holds none of them answers FailedPrecondition at once.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func main() {
	var opts []entropy.Option
	if list := os.Getenv("ACCEPT_KINDS"); list != "" {
		var kinds []entropy.SourceKind
		for _, name := range strings.Split(list, ",") {
			switch strings.TrimSpace(name) {
			case "quantum":
				kinds = append(kinds, entropy.KindQuantum)
			case "hardware":
				kinds = append(kinds, entropy.KindHardware)
			case "os":
				kinds = append(kinds, entropy.KindOS)
			default:
				log.Fatalf("ACCEPT_KINDS: unknown kind %q (quantum, hardware, os)", name)
			}
		}
		opts = append(opts, entropy.WithAcceptKinds(kinds...))
	}
	c, err := entropy.NewFromEnv(opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	d, err := c.Draw(ctx, 32)
	if errors.Is(err, entropy.ErrFailedPrecondition) {
		log.Fatal("the gateway holds no bytes of the accepted kinds: ", err)
	} else if err != nil {
		log.Fatal(err)
	}
	p := d.Provenance
	fmt.Printf("%d bytes %x kinds=%v collectors=%v chunks=%d first=%d last=%d\n",
		len(d.Data), d.Data, p.Kinds, p.CollectorIDs, p.ChunkCount, p.FirstChunk.Sequence, p.LastChunk.Sequence)
	report, err := c.CheckQuality(ctx, 64<<10)
	if err != nil {
		log.Fatal(err) // PermissionDenied: the key lacks the quality:check scope
	}
	fmt.Printf("quality passed=%v shannon=%.4f min-entropy=%.4f fips-blocks=%d failures=%q\n",
		report.Passed, report.ShannonEntropyBitsPerByte, report.MinEntropyBitsPerByte,
		report.FIPS140_2.Blocks, report.Failures)
}
