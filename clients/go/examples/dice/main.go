// Dice rolls ten six-sided dice (unbiased: the gateway uses rejection sampling).
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func main() {
	// A dev gateway is plaintext; leave out WithInsecure for a TLS gateway.
	c, err := entropy.New(endpoint(), os.Getenv("ENTROPY_API_KEY"), entropy.WithInsecure())
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

func endpoint() string {
	if e := os.Getenv("ENTROPY_ENDPOINT"); e != "" {
		return e
	}
	return "127.0.0.1:50051"
}
