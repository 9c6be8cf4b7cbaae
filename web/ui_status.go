package web

// The status page: build information, flags, store size and persistence
// state.

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushgate/pushgate/store"
)

// statusPage is the data of the status template.
type statusPage struct {
	pageMeta
	StartTime string
	Uptime    string
	Build     []stringPair
	Flags     []stringPair
	Stats     store.Stats
	// Journal or Cluster is the storage backend's state; neither when
	// memory-only.
	Journal *journalView
	Cluster *clusterView
}

// journalView is the file journal's state, formatted.
type journalView struct {
	Path           string
	FileSize       string
	LiveSize       string
	LastCompaction string
	Compactions    uint64
	Syncs          uint64
	Error          string
}

// clusterView is a cluster replica's state, formatted.
type clusterView struct {
	Endpoints string
	Leader    string
	Role      string
	Applied   uint64
	Committed uint64
	Lag       uint64
	Rebuilds  uint64
	Error     string
}

// uiStatus serves the status page: build information, start time, flags,
// store size and persistence state.
func (h *Handler) uiStatus(w http.ResponseWriter, r *http.Request) {
	page := statusPage{pageMeta: h.meta("Status"), Stats: h.store().Stats()}
	page.StartTime = formatTime(h.opts.StartTime)
	if !h.opts.StartTime.IsZero() {
		page.Uptime = time.Since(h.opts.StartTime).Round(time.Second).String()
	}
	bi := h.buildInformation()
	for _, k := range []string{"version", "revision", "branch", "buildUser", "buildDate", "goVersion"} {
		page.Build = append(page.Build, stringPair{k, bi[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(h.opts.Flags)) {
		page.Flags = append(page.Flags, stringPair{k, h.opts.Flags[k]})
	}
	if h.opts.Storage != nil {
		switch st := h.opts.Storage().(type) {
		case JournalStatus:
			page.Journal = &journalView{
				Path:           st.Path,
				FileSize:       formatBytes(st.FileBytes),
				LiveSize:       formatBytes(st.LiveBytes),
				LastCompaction: formatTime(st.LastCompaction),
				Compactions:    st.Compactions,
				Syncs:          st.Syncs,
				Error:          errorText(st.Err),
			}
		case ClusterStatus:
			cv := &clusterView{
				Endpoints: strings.Join(st.Endpoints, ", "),
				Leader:    st.Leader,
				Applied:   st.Applied,
				Committed: max(st.Committed, st.Applied),
				Rebuilds:  st.Rebuilds,
				Error:     errorText(st.Err),
			}
			cv.Lag = cv.Committed - cv.Applied
			switch {
			case st.Leading:
				cv.Role = "leader: takes writes"
			case st.Ready:
				cv.Role = "follower: forwards writes to the leader"
			default:
				cv.Role = "loading: serves nothing until current"
			}
			page.Cluster = cv
		}
	}
	h.render(w, r, http.StatusOK, h.ui.status, page)
}

// errorText is err's text, "" for nil.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// formatBytes renders a size in bytes with a binary unit.
func formatBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	v := float64(n)
	i := -1
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + " " + units[i]
}
