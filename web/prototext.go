package web

// The protobuf text formats, encoding=text and encoding=compact-text: debug
// formats the reference serves to clients that ask for them first (curl,
// scripts, people). They are built here from the store's read API, whole in
// memory, rather than streamed by the store like the scrape formats: nothing
// scrapes in them, and a response that is ready before its status line is
// sent can still answer 500 when a stored family does not decode.

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/store"
)

// protoTextFormat returns the protobuf text format the Accept header asks
// for before any other format the gateway serves, with the escaping= it
// asks for, the way the reference negotiates it; ok is false when it asks
// for another format first (or for none of these at all, the common case,
// which costs two substring searches).
func protoTextFormat(h http.Header) (f expfmt.Format, ok bool) {
	accept := h.Get("Accept")
	if !strings.Contains(accept, "vnd.google.protobuf") || !strings.Contains(accept, "text") {
		return "", false
	}
	f = expfmt.NegotiateAccept(h,
		expfmt.FmtProtoDelim, expfmt.FmtProtoText, expfmt.FmtProtoCompact, expfmt.FmtText,
		expfmt.FmtOpenMetrics_1_0_0, expfmt.FmtOpenMetrics_0_0_1)
	switch f.FormatType() {
	case expfmt.TypeProtoText, expfmt.TypeProtoCompact:
		return f, true
	}
	return "", false
}

// scrapeProtoText serves the merged exposition in a protobuf text format:
// each family as a MetricFamily message in the protobuf text syntax, one
// after the other, each followed by a newline (multi-line messages for
// encoding=text, one line each for compact-text), as the reference writes
// them. Families are merged by name as in every other format: the gateway's
// own first, then the groups' in grouping-key order.
func (h *Handler) scrapeProtoText(w http.ResponseWriter, r *http.Request, f expfmt.Format, own []*dto.MetricFamily) {
	fams, err := mergeFamilies(own, h.store().Groups())
	if err != nil {
		h.fail(w, "metrics", "internal", http.StatusInternalServerError, fmt.Errorf("render the protobuf text format: %w", err))
		return
	}
	w.Header().Set("Content-Type", string(f))
	w.Header().Add("Vary", "Accept, Accept-Encoding")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	out := io.Writer(w)
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := h.gzip.get(w)
		defer func() {
			if err := zw.Close(); err != nil {
				h.logger.Debug("scrape aborted", "err", err)
				return
			}
			h.gzip.put(zw)
		}()
		out = zw
	}
	opts := prototext.MarshalOptions{Multiline: f.FormatType() == expfmt.TypeProtoText}
	scheme := f.ToEscapingScheme()
	var buf []byte
	for _, mf := range fams {
		buf, err = opts.MarshalAppend(buf[:0], exposition.EscapeFamily(mf, scheme))
		if err != nil {
			h.logger.Error("render the protobuf text format", "family", mf.GetName(), "err", err)
			return
		}
		buf = append(buf, '\n')
		if _, err := out.Write(buf); err != nil {
			h.logger.Debug("scrape aborted", "err", err)
			return
		}
	}
}

// mergeFamilies merges the gateway's own families and every group's into
// one family per name, sorted by name. A family's HELP, TYPE and unit are
// the gateway's own when it has a family of that name, else those of the
// first group holding it (the first non-empty HELP), as in the streamed
// formats. Families without series are left out. Nothing of own or the
// groups is modified.
func mergeFamilies(own []*dto.MetricFamily, groups []*store.Group) ([]*dto.MetricFamily, error) {
	byName := make(map[string]*dto.MetricFamily, len(own))
	fromOwn := make(map[string]bool, len(own))
	var out []*dto.MetricFamily
	for _, mf := range own {
		m := shallowFamily(mf)
		m.Metric = append([]*dto.Metric(nil), mf.Metric...)
		byName[mf.GetName()] = m
		fromOwn[mf.GetName()] = true
		out = append(out, m)
	}
	for _, g := range groups {
		for _, f := range g.Families() {
			mf, err := f.Decode()
			if err != nil {
				return nil, fmt.Errorf("group %s: %w", g.Key(), err)
			}
			m := byName[mf.GetName()]
			if m == nil {
				byName[mf.GetName()] = mf
				out = append(out, mf)
				continue
			}
			if m.GetHelp() == "" && !fromOwn[m.GetName()] {
				m.Help = mf.Help
			}
			m.Metric = append(m.Metric, mf.Metric...)
		}
	}
	kept := out[:0]
	for _, mf := range out {
		if len(mf.Metric) > 0 {
			kept = append(kept, mf)
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].GetName() < kept[j].GetName() })
	return kept, nil
}

// shallowFamily copies mf's fields, sharing its metrics.
func shallowFamily(mf *dto.MetricFamily) *dto.MetricFamily {
	return &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit, Metric: mf.Metric}
}
