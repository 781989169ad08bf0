// UUIDs prints five random (version 4) UUIDs.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func main() {
	c, err := entropy.NewFromEnv()
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
