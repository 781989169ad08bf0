// Password prints a 20-character password: each character an unbiased draw from the alphabet.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&*+-=?@^_"

func main() {
	c, err := entropy.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	picks, err := c.Integers(context.Background(), 0, int64(len(alphabet)-1), 20)
	if err != nil {
		log.Fatal(err)
	}
	password := make([]byte, len(picks))
	for i, p := range picks {
		password[i] = alphabet[p]
	}
	fmt.Println(string(password))
}
