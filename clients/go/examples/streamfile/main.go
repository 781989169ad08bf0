// Streamfile streams 8 MiB of random bytes into a file (path from the first argument, default
// random.bin). The reader reconnects after a dropped connection without losing or repeating
// bytes.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func main() {
	path := "random.bin"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	c, err := entropy.NewFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	r := c.NewReader(context.Background(), 8<<20, 64<<10)
	defer r.Close()
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %d bytes to %s\n", n, path)
}
