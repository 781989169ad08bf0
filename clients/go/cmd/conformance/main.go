// Command conformance is the Go client's conformance program (see clients/conformance/README.md
// and "Reader programs" in clients/README.md). The key is in ENTROPY_API_KEY.
//
//	conformance --endpoint E --stall-endpoint S
//	conformance reader --endpoint E --total N --chunk-bytes C --out FILE [--pace-ms P] [--budget-ms B]
//	conformance throughput --endpoint E --total N --chunk-bytes C --mode reader|stub
//
// The default mode runs every case against the gateway at --endpoint and prints one JSON line
// per case. It reports what it observed; the driver judges it, the same way for every language.
// reader reads exactly N bytes through entropy.Reader in reads of C bytes, sleeping P ms after
// each, appending every byte to FILE as it arrives, with reconnect budget B ms (default the
// library's), and prints {"code", "bytes", "reconnects", "error"}. throughput reads N bytes as
// fast as it can, through entropy.Reader or the raw generated stub with default channel
// options, and prints {"bytes", "seconds"}.
package main

import (
	"context"
	"crypto/tls"
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

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

type observation map[string]any

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "reader":
			readerMode(os.Args[2:])
			return
		case "throughput":
			throughputMode(os.Args[2:])
			return
		}
	}
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
	c, err := entropy.New(target, key)
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

// readerMode is the restart run's reader (clients/conformance/restart.py).
func readerMode(args []string) {
	fs := flag.NewFlagSet("reader", flag.ExitOnError)
	endpoint := fs.String("endpoint", "", "the gateway, in the endpoint syntax")
	total := fs.Uint64("total", 0, "bytes to read (> 0)")
	chunk := fs.Uint("chunk-bytes", 65536, "bytes per read, and per message asked of the gateway")
	out := fs.String("out", "", "file every byte is appended to as it arrives")
	pace := fs.Int("pace-ms", 0, "sleep after each read, ms")
	budget := fs.Int64("budget-ms", -1, "reconnect budget, ms (0: forever; default the library's)")
	_ = fs.Parse(args)
	if *endpoint == "" || *total == 0 || *out == "" || *chunk == 0 || *chunk > 1<<20 {
		log.Fatal("reader needs --endpoint, --total N > 0, --chunk-bytes 1..=1048576 and --out")
	}
	var got uint64
	reconnects := 0
	report := func(err error) {
		obs := observation{"code": "OK", "bytes": got, "reconnects": reconnects, "error": ""}
		if err != nil {
			obs["code"], obs["error"] = errorCode(err), err.Error()
		}
		line, _ := json.Marshal(obs)
		fmt.Println(string(line))
	}
	var clientOpts []entropy.Option
	if ca := os.Getenv("ENTROPY_CA_FILE"); ca != "" {
		clientOpts = append(clientOpts, entropy.WithCAFile(ca))
	}
	c, err := entropy.New(*endpoint, os.Getenv("ENTROPY_API_KEY"), clientOpts...)
	if err != nil {
		report(err)
		return
	}
	defer c.Close()
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	var opts []entropy.StreamOption
	if *budget >= 0 {
		opts = append(opts, entropy.WithReconnectBudget(time.Duration(*budget)*time.Millisecond))
	}
	r := c.NewReader(context.Background(), *total, uint32(*chunk), opts...)
	defer r.Close()
	buf := make([]byte, *chunk)
	for got < *total {
		n, rerr := io.ReadFull(r, buf[:min(uint64(len(buf)), *total-got)])
		if n > 0 {
			if _, werr := f.Write(buf[:n]); werr != nil {
				log.Fatal(werr)
			}
			got += uint64(n)
		}
		if rerr != nil {
			err = rerr
			break
		}
		if *pace > 0 {
			time.Sleep(time.Duration(*pace) * time.Millisecond)
		}
	}
	reconnects = r.Reconnects()
	report(err)
}

// throughputMode reads --total bytes as fast as it can and reports how long it took.
func throughputMode(args []string) {
	fs := flag.NewFlagSet("throughput", flag.ExitOnError)
	endpoint := fs.String("endpoint", "", "the gateway, in the endpoint syntax")
	total := fs.Uint64("total", 0, "bytes to read (> 0)")
	chunk := fs.Uint("chunk-bytes", 65536, "bytes per message (and per read, for --mode reader)")
	mode := fs.String("mode", "reader", "reader (entropy.Reader) or stub (the generated stub)")
	_ = fs.Parse(args)
	if *endpoint == "" || *total == 0 || *chunk == 0 || *chunk > 1<<20 {
		log.Fatal("throughput needs --endpoint, --total N > 0 and --chunk-bytes 1..=1048576")
	}
	key := os.Getenv("ENTROPY_API_KEY")
	var got uint64
	var start time.Time
	switch *mode {
	case "reader":
		c, err := entropy.New(*endpoint, key)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		start = time.Now()
		r := c.NewReader(context.Background(), *total, uint32(*chunk))
		n, err := io.CopyBuffer(io.Discard, r, make([]byte, *chunk))
		if err != nil {
			log.Fatal(err)
		}
		got = uint64(n)
	case "stub":
		ep, err := entropy.ParseEndpoint(*endpoint, false)
		if err != nil {
			log.Fatal(err)
		}
		transport := insecure.NewCredentials()
		if ep.TLS {
			transport = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
		}
		conn, err := grpc.NewClient(ep.Address(), grpc.WithTransportCredentials(transport))
		if err != nil {
			log.Fatal(err)
		}
		defer conn.Close()
		start = time.Now()
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
		stream, err := entropyv1.NewEntropyServiceClient(conn).StreamRandom(ctx,
			&entropyv1.StreamRandomRequest{ChunkBytes: uint32(*chunk), TotalBytes: *total})
		if err != nil {
			log.Fatal(err)
		}
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				log.Fatal(err)
			}
			got += uint64(len(msg.GetData()))
		}
	default:
		log.Fatalf("--mode %q: reader or stub", *mode)
	}
	line, _ := json.Marshal(observation{"bytes": got, "seconds": time.Since(start).Seconds()})
	fmt.Println(string(line))
}

// errorCode is the canonical status name of err ("UNAVAILABLE"), or CLIENT_ERROR.
func errorCode(err error) string {
	var e *entropy.Error
	if errors.As(err, &e) {
		return codeName(e.Code.String())
	}
	return "CLIENT_ERROR"
}
