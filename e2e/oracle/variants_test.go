package oracle

import (
	"github.com/prometheus/common/model"
)

// Media types a scrape may be answered in.
const (
	mtText        = "text/plain"
	mtOpenMetrics = "application/openmetrics-text"
	mtProtobuf    = "application/vnd.google.protobuf"
)

// Scrapers' exact default Accept headers.
const (
	// acceptPrometheus2 is Prometheus 2.x (before scrape_protocols, as in
	// Debian's 2.42): the scrapeAcceptHeader constant of its scrape package.
	acceptPrometheus2 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	// acceptPrometheus2Native is the same with --enable-feature=native-histograms
	// (scrapeAcceptHeaderWithProtobuf).
	acceptPrometheus2Native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	// acceptPrometheus3 is Prometheus 3 (v0.316.0) with its defaults:
	// config.DefaultScrapeProtocols rendered by scrape's acceptHeader with
	// the weight starting at len(config.ScrapeProtocolsHeaders)+1 = 7 and the
	// escaping of metric_name_validation_scheme utf8 (allow-utf-8) on the
	// 1.0.0 formats.
	acceptPrometheus3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.7,application/openmetrics-text;version=0.0.1;q=0.6,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.3"
	// acceptPrometheus3Legacy is Prometheus 3 with
	// metric_name_validation_scheme: legacy (escaping=underscores).
	acceptPrometheus3Legacy = "application/openmetrics-text;version=1.0.0;escaping=underscores;q=0.7,application/openmetrics-text;version=0.0.1;q=0.6,text/plain;version=1.0.0;escaping=underscores;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.3"
	// acceptPrometheus3Native is Prometheus 3 with scrape_native_histograms:
	// config.DefaultProtoFirstScrapeProtocols.
	acceptPrometheus3Native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
)

// served is one answer a scrape variant may get: a media type, its version
// parameter ("" for protobuf) and the escapings its Content-Type may
// declare.
type served struct {
	mediaType string
	version   string
	escapings []model.EscapingScheme
}

// variant is one way of scraping /metrics.
type variant struct {
	name   string
	accept string
	gzip   bool
	// allowed lists the answers the Accept header allows.
	allowed []served
}

var (
	utf8Only       = []model.EscapingScheme{model.NoEscaping}
	underscoreOnly = []model.EscapingScheme{model.UnderscoreEscaping}
	// utf8OrUnderscores is for an answer to a clause that named no
	// escaping after one that asked for allow-utf-8: expfmt carries the
	// earlier clause's escaping over, the default is underscores, and
	// Prometheus 3 reads both.
	utf8OrUnderscores = []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping}
	anyEscaping       = []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping, model.DotsEscaping, model.ValueEncodingEscaping}
)

// canonicalVariant is the scrape every other one is compared with, and the
// one compared with the model: protobuf (native histograms stay native)
// with UTF-8 names as they were pushed.
const canonicalVariant = "protobuf-allow-utf-8"

// variants is every scrape a check makes.
var variants = buildVariants()

func buildVariants() []variant {
	text := func(version string, e []model.EscapingScheme) served { return served{mtText, version, e} }
	om := func(version string, e []model.EscapingScheme) served { return served{mtOpenMetrics, version, e} }
	pb := func(e []model.EscapingScheme) served { return served{mtProtobuf, "", e} }
	base := []variant{
		{name: "no-accept", accept: "", allowed: []served{text("0.0.4", underscoreOnly)}},
		{name: "text-0.0.4", accept: "text/plain;version=0.0.4", allowed: []served{text("0.0.4", underscoreOnly)}},
		{name: "openmetrics-0.0.1", accept: "application/openmetrics-text;version=0.0.1", allowed: []served{om("0.0.1", underscoreOnly)}},
		{name: "openmetrics-1.0.0", accept: "application/openmetrics-text;version=1.0.0", allowed: []served{om("1.0.0", underscoreOnly)}},
		{name: "openmetrics-1.0.0-allow-utf-8", accept: "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8", allowed: []served{om("1.0.0", utf8Only)}},
		{name: "protobuf", accept: "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", allowed: []served{pb(underscoreOnly)}},
		{name: canonicalVariant, accept: "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8", allowed: []served{pb(utf8Only)}},
	}
	for _, e := range escapings {
		// The gateway may answer a text 1.0.0 request in 0.0.4 syntax
		// (the same but for the escaping parameter).
		es := []model.EscapingScheme{e}
		base = append(base, variant{
			name:    "text-1.0.0-" + e.String(),
			accept:  "text/plain;version=1.0.0;escaping=" + e.String(),
			allowed: []served{text("1.0.0", es), text("0.0.4", es)},
		})
	}
	var out []variant
	for _, v := range base {
		out = append(out, v)
		gz := v
		gz.name += "+gzip"
		gz.gzip = true
		out = append(out, gz)
	}
	// Prometheus always asks for gzip.
	out = append(out,
		variant{name: "prometheus-2", accept: acceptPrometheus2, gzip: true, allowed: []served{
			om("1.0.0", underscoreOnly), om("0.0.1", underscoreOnly), text("0.0.4", underscoreOnly),
		}},
		variant{name: "prometheus-2-native-histograms", accept: acceptPrometheus2Native, gzip: true, allowed: []served{
			pb(underscoreOnly), om("1.0.0", underscoreOnly), om("0.0.1", underscoreOnly), text("0.0.4", underscoreOnly),
		}},
		variant{name: "prometheus-3", accept: acceptPrometheus3, gzip: true, allowed: []served{
			om("1.0.0", utf8Only), om("0.0.1", utf8OrUnderscores), text("1.0.0", utf8Only), text("0.0.4", utf8OrUnderscores), pb(anyEscaping),
		}},
		variant{name: "prometheus-3-legacy-names", accept: acceptPrometheus3Legacy, gzip: true, allowed: []served{
			om("1.0.0", underscoreOnly), om("0.0.1", underscoreOnly), text("1.0.0", underscoreOnly), text("0.0.4", underscoreOnly),
		}},
		variant{name: "prometheus-3-native-histograms", accept: acceptPrometheus3Native, gzip: true, allowed: []served{
			pb(utf8OrUnderscores), om("1.0.0", utf8Only), om("0.0.1", utf8OrUnderscores), text("1.0.0", utf8Only), text("0.0.4", utf8OrUnderscores),
		}},
	)
	return out
}

// variantIndex returns the index of the variant called name, or -1.
func variantIndex(name string) int {
	for i, v := range variants {
		if v.name == name {
			return i
		}
	}
	return -1
}
