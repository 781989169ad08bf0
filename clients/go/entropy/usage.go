// GetUsage as plain Go types: the calling key's limits and what is left of each.

package entropy

import (
	"context"

	entropyv1 "github.com/entropy-diode/entropy-diode/clients/go/gen/entropy/v1"
)

// Usage is the calling key's limits and what is left of each (GetUsage). A rate limit the key
// does not have is nil.
type Usage struct {
	KeyName string
	// Requests is requests_per_second: each unary call and stream opened takes one (Usage
	// none).
	Requests *RateUsage
	// Bytes is bytes_per_second: pool bytes.
	Bytes *RateUsage
	// DRBGBytes is drbg_bytes_per_second: DRBG output.
	DRBGBytes *RateUsage
	// Streams is max_streams.
	Streams HeldUsage
	// UndeliveredBytes is max_undelivered_bytes (never unlimited).
	UndeliveredBytes HeldUsage
}

// RateUsage is one rate limit: a token bucket holding at most Burst units, refilled PerSecond a
// second, evenly. Durations are whole milliseconds, rounded up.
type RateUsage struct {
	PerSecond uint64
	// Burst is the most units the bucket holds: the most one call can take at once.
	Burst uint64
	// Remaining is the units that could be taken now.
	Remaining uint64
	// NextRefillMs is the time until one more unit is there; 0 when full.
	NextRefillMs uint64
	// FullInMs is the time until the bucket is full again if nothing more is taken; 0 when
	// full.
	FullInMs uint64
}

// HeldUsage is a limit on what the key holds at once (streams open, bytes drawn and not yet
// read): units come back when the key lets them go, not over time. Limit and Remaining are nil
// when the key has no such limit.
type HeldUsage struct {
	Limit     *uint64
	InUse     uint64
	Remaining *uint64
}

// Usage returns this client's key's limits and what is left of each now: calls and bytes per
// second (with when they refill), streams open, bytes drawn and not yet read. Any valid key may
// ask, about itself only; asking costs none of it.
func (c *Client) Usage(ctx context.Context) (*Usage, error) {
	resp, err := unary(c, ctx, c.rpc.GetUsage, &entropyv1.GetUsageRequest{})
	if err != nil {
		return nil, err
	}
	return usageFromPB(resp), nil
}

func usageFromPB(m *entropyv1.GetUsageResponse) *Usage {
	return &Usage{
		KeyName:          m.GetKeyName(),
		Requests:         rateFromPB(m.GetRequests()),
		Bytes:            rateFromPB(m.GetBytes()),
		DRBGBytes:        rateFromPB(m.GetDrbgBytes()),
		Streams:          heldFromPB(m.GetStreams()),
		UndeliveredBytes: heldFromPB(m.GetUndeliveredBytes()),
	}
}

func rateFromPB(r *entropyv1.RateUsage) *RateUsage {
	if r == nil || r.GetUnlimited() {
		return nil
	}
	return &RateUsage{
		PerSecond:    r.GetPerSecond(),
		Burst:        r.GetBurst(),
		Remaining:    r.GetRemaining(),
		NextRefillMs: r.GetNextRefillMs(),
		FullInMs:     r.GetFullInMs(),
	}
}

func heldFromPB(h *entropyv1.HeldUsage) HeldUsage {
	if h == nil || h.GetUnlimited() {
		return HeldUsage{InUse: h.GetInUse()}
	}
	limit, remaining := h.GetLimit(), h.GetRemaining()
	return HeldUsage{Limit: &limit, InUse: h.GetInUse(), Remaining: &remaining}
}
