package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
)

// BenchmarkPushText pushes the bench payload's text body again to 1,000
// groups that hold it, as the web handler does: from the group's template
// (template), or decoded and checked (parsed), with no scrape (rendered=no)
// or a text scrape before each push (rendered=yes: the push renders its
// text bodies).
func BenchmarkPushText(b *testing.B) {
	const groups = 1000
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = payload.Text(i, i+1)
	}
	for _, templates := range []bool{true, false} {
		for _, rendered := range []string{"no", "yes"} {
			name := map[bool]string{true: "template", false: "parsed"}[templates]
			b.Run(fmt.Sprintf("push=%s/rendered=%s", name, rendered), func(b *testing.B) {
				s := New(Options{})
				tp := textPusher{s: s, templates: templates}
				keys := make([]groupkey.Key, groups)
				at := time.Unix(1_700_000_000, 0)
				for i := range keys {
					keys[i] = groupkey.New(map[string]string{"job": payload.Job, "instance": fmt.Sprintf("i%d", i)})
					if _, err := tp.push(b, keys[i], Replace, bodies[i%len(bodies)], at); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.SetBytes(int64(len(bodies[0])))
				i := 0
				for b.Loop() {
					if rendered == "yes" {
						s.render.StartScrape(exposition.EncodingText)
					}
					at = at.Add(time.Millisecond)
					if _, err := tp.push(b, keys[i%groups], Replace, bodies[i%len(bodies)], at); err != nil {
						b.Fatal(err)
					}
					i++
				}
				if templates && s.TemplatePushes() == 0 {
					b.Fatal("no push was applied from its template")
				}
			})
		}
	}
}
