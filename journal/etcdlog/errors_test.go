package etcdlog

import (
	"context"
	"errors"
	"io"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func TestCommitErrorClassification(t *testing.T) {
	for _, tc := range []struct {
		name          string
		err           error
		wantAmbiguous bool
		wantIs        error
	}{
		{name: "NOSPACE is definite and maps to ErrNoSpace", err: rpctypes.ErrNoSpace, wantIs: ErrNoSpace},
		{name: "a request too large is definite and maps to ErrTooLarge", err: rpctypes.ErrRequestTooLarge, wantIs: ErrTooLarge},
		{name: "a permission refusal is definite", err: rpctypes.ErrPermissionDenied, wantIs: rpctypes.ErrPermissionDenied},
		{name: "too many requests is definite", err: rpctypes.ErrTooManyRequests, wantIs: rpctypes.ErrTooManyRequests},
		{name: "a timeout is ambiguous", err: context.DeadlineExceeded, wantAmbiguous: true, wantIs: ErrAmbiguous},
		{name: "etcd's own timeout is ambiguous", err: rpctypes.ErrTimeout, wantAmbiguous: true, wantIs: ErrAmbiguous},
		{name: "a leader change inside etcd is ambiguous", err: rpctypes.ErrLeaderChanged, wantAmbiguous: true, wantIs: ErrAmbiguous},
		{name: "a lost connection is ambiguous", err: io.ErrUnexpectedEOF, wantAmbiguous: true, wantIs: ErrAmbiguous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ambiguous := commitError(tc.err)
			if ambiguous != tc.wantAmbiguous || !errors.Is(got, tc.wantIs) || !errors.Is(got, tc.err) {
				t.Errorf("commitError(%v) = %v, ambiguous %v; want ambiguous %v, wrapping %v and the cause", tc.err, got, ambiguous, tc.wantAmbiguous, tc.wantIs)
			}
		})
	}
}
