// Dice rolls ten six-sided dice (unbiased: the gateway uses rejection sampling).
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func main() {
	// ENTROPY_ENDPOINT (default 127.0.0.1:50051: a --dev gateway, plaintext on loopback),
	// ENTROPY_API_KEY, and ENTROPY_CA_FILE for a private CA.
	c, err := entropy.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	rolls, err := c.Integers(context.Background(), 1, 6, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rolls)
}
