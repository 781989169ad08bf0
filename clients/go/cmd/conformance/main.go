// Command conformance is the Go client's conformance program (see clients/conformance/README.md):
// it runs every case against the gateway at -endpoint (key in ENTROPY_API_KEY) and prints one
// JSON line per case. It reports what it observed; the driver judges it, the same way for
// every language.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"strconv"
	"time"
	"unicode"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

type observation map[string]any

func main() {
	endpoint := flag.String("endpoint", "", "gateway host:port")
	stall := flag.String("stall-endpoint", "", "a server that never answers")
	flag.Parse()
	key := os.Getenv("ENTROPY_API_KEY")
	if *endpoint == "" || *stall == "" || key == "" {
		log.Fatal("need -endpoint, -stall-endpoint and ENTROPY_API_KEY")
	}
	c := dial(*endpoint, key)
	wrong := dial(*endpoint, "wrong-"+key)
	stalled := dial(*stall, key)
	ctx := context.Background()
	b64 := base64.StdEncoding.EncodeToString

	run("get_random_32", func() (observation, error) {
		b, err := c.Bytes(ctx, 32)
		return observation{"data_b64": b64(b)}, err
	})
	run("num_bytes_zero", func() (observation, error) {
		b, err := c.Bytes(ctx, 0)
		return observation{"data_b64": b64(b)}, err
	})
	run("num_bytes_too_big", func() (observation, error) {
		b, err := c.Bytes(ctx, 1<<20+1)
		return observation{"data_b64": b64(b)}, err
	})
	run("integers_min_above_max", func() (observation, error) {
		v, err := c.Integers(ctx, 5, 1, 1)
		return observation{"values": v}, err
	})
	run("dice", func() (observation, error) {
		v, err := c.Integers(ctx, 1, 6, 1000)
		return observation{"values": v}, err
	})
	run("int64_full_range", func() (observation, error) {
		v, err := c.Integers(ctx, math.MinInt64, math.MaxInt64, 100)
		s := make([]string, len(v)) // decimal strings: JSON numbers cannot hold int64
		for i, x := range v {
			s[i] = strconv.FormatInt(x, 10)
		}
		return observation{"values": s}, err
	})
	run("floats", func() (observation, error) {
		v, err := c.Floats(ctx, 1000)
		return observation{"values": v}, err
	})
	run("uuids", func() (observation, error) {
		v, err := c.UUIDs(ctx, 100)
		return observation{"values": v}, err
	})
	run("stream_1mib", func() (observation, error) {
		r := c.NewReader(ctx, 1<<20, 64<<10)
		defer r.Close()
		b, err := io.ReadAll(r)
		return observation{"data_b64": b64(b)}, err
	})
	run("wrong_key", func() (observation, error) {
		b, err := wrong.Bytes(ctx, 32)
		return observation{"data_b64": b64(b)}, err
	})
	run("status", func() (observation, error) {
		s, err := c.Status(ctx)
		if err != nil {
			return nil, err
		}
		return observation{"pool_capacity_bytes": strconv.FormatUint(s.PoolCapacityBytes, 10)}, nil
	})
	run("deadline", func() (observation, error) {
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		b, err := stalled.Bytes(dctx, 32)
		return observation{"data_b64": b64(b)}, err
	})
}

func dial(target, key string) *entropy.Client {
	c, err := entropy.New(target, key, entropy.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	return c
}

func run(name string, c func() (observation, error)) {
	obs, err := c()
	var e *entropy.Error
	switch {
	case err == nil:
		obs["code"] = "OK"
	case errors.As(err, &e):
		obs = observation{"code": codeName(e.Code.String()), "error": e.Error()}
	default: // not an *Error: the client's own failure
		obs = observation{"code": "CLIENT_ERROR", "error": err.Error()}
	}
	obs["case"] = name
	line, err := json.Marshal(obs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(line))
}

// codeName turns grpc-go's "InvalidArgument" into the canonical "INVALID_ARGUMENT".
func codeName(s string) string {
	var out []rune
	for i, r := range s {
		if i > 0 && unicode.IsUpper(r) && unicode.IsLower(rune(s[i-1])) {
			out = append(out, '_')
		}
		out = append(out, unicode.ToUpper(r))
	}
	return string(out)
}
