// UUIDs prints five random (version 4) UUIDs.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func main() {
	c, err := entropy.New(endpoint(), os.Getenv("ENTROPY_API_KEY"), entropy.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ids, err := c.UUIDs(context.Background(), 5)
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range ids {
		fmt.Println(id)
	}
}

func endpoint() string {
	if e := os.Getenv("ENTROPY_ENDPOINT"); e != "" {
		return e
	}
	return "127.0.0.1:50051"
}
