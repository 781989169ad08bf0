package entropy_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// step is what one scripted StreamRandom call does: send chunks messages (-1: all that was
// asked for), then end with code (codes.OK: normally), or with hang, send nothing more until
// the client gives up on the stream.
type step struct {
	chunks int
	code   codes.Code
	hang   bool
}

// fakeEntropy is a scripted EntropyService, for what a live gateway cannot be made to do on
// cue: fail a stream after exactly k chunks, end it early, answer with a given status.
type fakeEntropy struct {
	entropyv1.UnimplementedEntropyServiceServer
	chunkSize int
	unaryErr  error
	trailer   metadata.MD

	// provenance is attached to every GetRandom response and stream message (stream messages
	// get a copy whose chunks' sequence is the message's number in its stream); quality and
	// status answer CheckQuality and GetStatus.
	provenance *entropyv1.DrawProvenance
	quality    *entropyv1.CheckQualityResponse
	status     *entropyv1.GetStatusResponse

	mu       sync.Mutex
	script   []step
	requests [][2]uint64 // (chunk_bytes, total_bytes) of each StreamRandom call
	sent     []byte
	// kinds is the accept_kinds of each call, in order, as "Method:[kinds]"; constructions its
	// construction, as "Method:CONSTRUCTION_X".
	kinds         []string
	constructions []string
}

func (f *fakeEntropy) record(method string, kinds []entropyv1.SourceKind, construction entropyv1.Construction) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kinds = append(f.kinds, fmt.Sprintf("%s:%v", method, kinds))
	f.constructions = append(f.constructions, fmt.Sprintf("%s:%v", method, construction))
}

func (f *fakeEntropy) constructionsSeen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.constructions...)
}

func (f *fakeEntropy) kindsSeen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.kinds...)
}

// messageProvenance is f.provenance with both chunks' sequence set to seq.
func (f *fakeEntropy) messageProvenance(seq uint64) *entropyv1.DrawProvenance {
	if f.provenance == nil {
		return nil
	}
	p := proto.Clone(f.provenance).(*entropyv1.DrawProvenance)
	p.FirstChunk = &entropyv1.ChunkRef{CollectorId: p.GetFirstChunk().GetCollectorId(), Sequence: seq}
	p.LastChunk = &entropyv1.ChunkRef{CollectorId: p.GetLastChunk().GetCollectorId(), Sequence: seq}
	return p
}

func (f *fakeEntropy) StreamRandom(req *entropyv1.StreamRandomRequest, s grpc.ServerStreamingServer[entropyv1.StreamRandomResponse]) error {
	f.record("StreamRandom", req.AcceptKinds, req.Construction)
	f.mu.Lock()
	f.requests = append(f.requests, [2]uint64{uint64(req.ChunkBytes), req.TotalBytes})
	st := step{chunks: -1}
	if len(f.script) > 0 {
		st, f.script = f.script[0], f.script[1:]
	}
	f.mu.Unlock()
	size := int(req.ChunkBytes)
	if size == 0 {
		size = f.chunkSize
	}
	left := int(req.TotalBytes)
	for i := 0; st.chunks < 0 || i < st.chunks; i++ {
		n := size
		if req.TotalBytes > 0 {
			if left == 0 {
				break
			}
			n = min(n, left)
			left -= n
		} else if i >= 10000 {
			break
		}
		data := make([]byte, n)
		_, _ = rand.Read(data)
		f.mu.Lock()
		f.sent = append(f.sent, data...)
		f.mu.Unlock()
		if err := s.Send(&entropyv1.StreamRandomResponse{Data: data, Provenance: f.messageProvenance(uint64(i))}); err != nil {
			return err
		}
	}
	if st.hang {
		<-s.Context().Done()
		return s.Context().Err()
	}
	if st.code != codes.OK {
		return status.Error(st.code, "injected by the test")
	}
	return nil
}

func (f *fakeEntropy) GetRandom(ctx context.Context, req *entropyv1.GetRandomRequest) (*entropyv1.GetRandomResponse, error) {
	f.record("GetRandom", req.AcceptKinds, req.Construction)
	if f.unaryErr != nil {
		_ = grpc.SetTrailer(ctx, f.trailer)
		return nil, f.unaryErr
	}
	data := make([]byte, req.NumBytes)
	_, _ = rand.Read(data)
	return &entropyv1.GetRandomResponse{Data: data, Provenance: f.provenance}, nil
}

func (f *fakeEntropy) GetIntegers(_ context.Context, req *entropyv1.GetIntegersRequest) (*entropyv1.GetIntegersResponse, error) {
	f.record("GetIntegers", req.AcceptKinds, req.Construction)
	return &entropyv1.GetIntegersResponse{Values: make([]int64, req.Count), Provenance: f.provenance}, f.unaryErr
}

func (f *fakeEntropy) GetFloats(_ context.Context, req *entropyv1.GetFloatsRequest) (*entropyv1.GetFloatsResponse, error) {
	f.record("GetFloats", req.AcceptKinds, req.Construction)
	return &entropyv1.GetFloatsResponse{Values: make([]float64, req.Count), Provenance: f.provenance}, f.unaryErr
}

func (f *fakeEntropy) GetUuids(_ context.Context, req *entropyv1.GetUuidsRequest) (*entropyv1.GetUuidsResponse, error) {
	f.record("GetUuids", req.AcceptKinds, req.Construction)
	return &entropyv1.GetUuidsResponse{Uuids: make([]string, req.Count), Provenance: f.provenance}, f.unaryErr
}

func (f *fakeEntropy) CheckQuality(_ context.Context, req *entropyv1.CheckQualityRequest) (*entropyv1.CheckQualityResponse, error) {
	f.record("CheckQuality", req.AcceptKinds, req.Construction)
	if f.unaryErr != nil {
		return nil, f.unaryErr
	}
	if f.quality == nil {
		return nil, status.Error(codes.Unimplemented, "no scripted report")
	}
	return f.quality, nil
}

func (f *fakeEntropy) GetStatus(context.Context, *entropyv1.GetStatusRequest) (*entropyv1.GetStatusResponse, error) {
	if f.status == nil {
		return nil, status.Error(codes.Unimplemented, "no scripted status")
	}
	return f.status, nil
}

func (f *fakeEntropy) snapshot() ([][2]uint64, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][2]uint64(nil), f.requests...), append([]byte(nil), f.sent...)
}

// serveFake serves f on 127.0.0.1 until the test ends and returns its address.
func serveFake(t *testing.T, f *fakeEntropy) string {
	t.Helper()
	return serveFakeOn(t, f, "127.0.0.1:0")
}

// serveFakeOn serves f on addr until the test ends and returns the address it listens on.
func serveFakeOn(t *testing.T, f *fakeEntropy, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	entropyv1.RegisterEntropyServiceServer(srv, f)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

// blackHole accepts connections and never answers: a server too slow for any deadline, so a
// client's DeadlineExceeded can be tested without racing a fast gateway.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return l.Addr().String()
}

// cutProxy relays 127.0.0.1 to upstream. Its first connection passes at most firstLimit bytes
// towards the client and then stalls, so the test knows a stream cannot have finished before
// it calls cut(); later connections are unlimited.
type cutProxy struct {
	addr        string
	l           net.Listener
	mu          sync.Mutex
	conns       []net.Conn
	connections int
	released    chan struct{}
	once        sync.Once
}

func newCutProxy(t *testing.T, upstream string, firstLimit int) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{addr: l.Addr().String(), l: l, released: make(chan struct{})}
	go func() {
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.connections++
			limit := -1
			if p.connections == 1 {
				limit = firstLimit
			}
			p.mu.Unlock()
			go p.pump(down, up, -1)
			go p.pump(up, down, limit)
		}
	}()
	t.Cleanup(func() { l.Close(); p.cut() })
	return p
}

func (p *cutProxy) pump(src, dst net.Conn, limit int) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 64<<10)
	sent := 0
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if limit >= 0 && sent+n > limit {
				_, _ = dst.Write(buf[:limit-sent])
				<-p.released // stall until cut
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			sent += n
		}
		if err != nil {
			return
		}
	}
}

// cut resets every open connection; the listener stays up so clients can reconnect.
func (p *cutProxy) cut() {
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.once.Do(func() { close(p.released) })
}

func (p *cutProxy) connectionCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connections
}
