// Seedprng seeds a fast local PRNG (math/rand/v2 ChaCha8) with 256 quantum bits: reproducible
// (print and keep the seed) yet unpredictable.
package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func main() {
	c, err := entropy.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	b, err := c.Bytes(context.Background(), 32)
	if err != nil {
		log.Fatal(err)
	}
	seed := [32]byte(b)
	local := rand.New(rand.NewChaCha8(seed))
	fmt.Printf("seed=%x normal=%.6f perm=%v\n", seed, local.NormFloat64(), local.Perm(10))
}
