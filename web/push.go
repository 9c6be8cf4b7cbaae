package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/store"
)

// push handles PUT (replace) and POST (merge) on a group path. Every push
// that gets this far is observed in the push duration and size summaries,
// rejected ones too, as the reference observes every push request.
func (h *Handler) push(w http.ResponseWriter, r *http.Request, rest string, method store.Method) {
	start := time.Now()
	defer h.metrics.observePush(r, start)
	key, err := groupkey.ParsePath(rest, groupkey.PathOptions{UTF8Names: h.opts.UTF8Names})
	if err != nil {
		h.rejectPush(w, r, "path", http.StatusBadRequest, err)
		return
	}
	// The key's lengths are refused before the body is read; the rest of
	// admission runs in the store.
	if err := admission.GroupingLimits(key, h.store().Limits()); err != nil {
		reason, code := storeErrorStatus(err)
		h.rejectPush(w, r, reason, code, err)
		return
	}
	body, err := h.requestBody(r)
	if err != nil {
		h.rejectPush(w, r, "encoding", statusOf(err), err)
		return
	}
	defer body.Close()
	st := h.store()
	read, err := exposition.Read(body, r.Header.Get("Content-Type"), exposition.DecodeOptions{
		UTF8Names: h.opts.UTF8Names,
		MaxBytes:  h.opts.MaxBodyBytes,
		// Stopping in the decoder keeps a million-series body from being
		// built at all; the store's check stays the authority.
		MaxSeries: st.Limits().MaxSeriesPerPush,
	})
	var decoded *exposition.Decoded
	if err == nil {
		push := store.Push{Key: key, Method: method, Time: start}
		if text := read.Text(); text != nil {
			// A text body of the shape the group's last push had is
			// stored from it, without being decoded.
			pos, handled, err := st.PushText(r.Context(), push, text)
			if handled {
				read.Release()
				h.pushed(w, r, pos, err)
				return
			}
		}
		decoded, err = read.Decode()
	}
	if err != nil {
		if errors.Is(err, exposition.ErrTooLarge) {
			h.rejectPush(w, r, "too_large", http.StatusRequestEntityTooLarge, err)
			return
		}
		if errors.Is(err, exposition.ErrTooManySeries) {
			rej := admission.TooManySeries(h.store().Limits(), err)
			reason, code := storeErrorStatus(rej)
			h.rejectPush(w, r, reason, code, rej)
			return
		}
		h.rejectPush(w, r, "body", http.StatusBadRequest, err)
		return
	}
	// The decoded families borrow pooled memory; the store copies what it
	// keeps and its errors are new strings, so they go back right after
	// Push, on every path, before the next push on this goroutine.
	pos, err := st.Push(r.Context(), store.Push{
		Key:         key,
		Method:      method,
		Families:    decoded.Families,
		Time:        start,
		KnownFields: decoded.KnownFields,
		Disposable:  true,
		Source:      decoded,
	})
	decoded.Release()
	h.pushed(w, r, pos, err)
}

// pushed answers a push the store applied, at position pos, or refused
// with err.
func (h *Handler) pushed(w http.ResponseWriter, r *http.Request, pos journal.Position, err error) {
	if err != nil {
		reason, code := storeErrorStatus(err)
		h.rejectPush(w, r, reason, code, err)
		return
	}
	setCommitPosition(w, pos)
	if h.opts.DisableConsistencyCheck {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// delete handles DELETE on a group path: 202, also when the group is absent.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request, rest string) {
	key, err := groupkey.ParsePath(rest, groupkey.PathOptions{UTF8Names: h.opts.UTF8Names})
	if err != nil {
		h.fail(w, "delete", "path", http.StatusBadRequest, err)
		return
	}
	pos, err := h.store().Delete(r.Context(), key)
	if err != nil {
		h.writeStoreError(w, "delete", err)
		return
	}
	setCommitPosition(w, pos)
	w.WriteHeader(http.StatusAccepted)
}

// requestBody returns the push body, decompressed according to
// Content-Encoding: gzip, or snappy in its framed (stream) format, as the
// client libraries send it. The size limit applies after decompression, in
// the decoder, so a compression bomb stops at the limit.
func (h *Handler) requestBody(r *http.Request) (io.ReadCloser, error) {
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return r.Body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, &statusError{code: http.StatusBadRequest, err: fmt.Errorf("invalid gzip body: %w", err)}
		}
		return zr, nil
	case "snappy":
		return io.NopCloser(s2.NewReader(r.Body)), nil
	default:
		return nil, &statusError{code: http.StatusUnsupportedMediaType, err: fmt.Errorf("unsupported Content-Encoding %q: use gzip, snappy or none", enc)}
	}
}
