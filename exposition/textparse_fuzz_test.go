package exposition

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

// textSeeds are bodies that exercise every branch of textParser and of
// expfmt's parser: they seed FuzzTextParserMatchesExpfmt and drive
// TestTextParserMatchesExpfmt.
var textSeeds = []string{
	"",
	"\n\n  \t\n",
	"x 1",
	"x 1\n   ",
	"x 1\r\ny 2\r\n",
	"zz 1\n# TYPE aa counter\naa 2\nmm{a=\"b\"} 3\n",
	"# HELP empty nothing here\n# TYPE empty gauge\nfull 1\n",
	"# some comment\nx 1\n# EOF\n",
	"#\n#HELP x y\n# HELP\n# HELP \n# HELP x\n# TYPE x\nx 1\n",
	"# HELP x a \\\\ b \\n c \\\" d\nx 1\n",
	"# HELP x bad \\t escape\nx 1\n",
	"# HELP x trailing backslash \\\nx 1\n",
	"# HELP 1x y\n",
	"# HELP x.y z\n",
	"# HELP x one\n# HELP x two\nx 1\n",
	"# TYPE x gauge\n# TYPE x gauge\nx 1\n",
	"# TYPE x gaugy\nx 1\n",
	"# TYPE x gauge \nx 1\n",
	"# TYPE x GAUGE\nx 1\n",
	"# TYPE x gaugehistogram\nx_bucket{le=\"1\"} 1\nx_count 1\n",
	"# TYPE x gauge_histogram\nx_bucket{le=\"1\"} 1\nx_count 1\n",
	"# TYPE x ſummary\nx{quantile=\"0.5\"} 1\n",
	"# TYPE x hıstogram\nx_bucket{le=\"1\"} 1\nx_count 1\n",
	"# TYPE x \u212Aounter\nx 1\n",
	"# TYPE x CoUnTeR\nx 1\n",
	"# TYPE A CoU\\nTeR\n",
	"# TYPE x \\gauge\\\nx 1\n",
	"# TYPE x \\\\\nx 1\n",
	"x 1 12 \\\n",
	"# TYPE x gaugeHistogram\nx_bucket{le=\"1\"} 1\nx_count 1\n",
	"x 1\n# TYPE x counter\n",
	"x 1\n# HELP x late help\n",
	"{\"my.metric\",\"lab.el\"=\"v\"} 1\n",
	"{\"a.b\"} 1\n",
	"m{\"l.x\"=\"v\"} 1\n",
	"\"quoted\" 1\n",
	"a\"b\" 1\n",
	"m{a\"b\"=\"c\"} 1\n",
	"{} 1\n",
	"{a=\"b\"} 1\n",
	"a.b 1\n",
	"foo.5\n",
	"foo+Inf\n",
	"ok 1\nfine 2\nx y\n",
	"x NaN\ny +Inf\nz -Inf\nw 1e3\nv -1.5E-3\nu 0x1p3\nt 1_000\ns .5\nr 1e999\n",
	"x nan\ny inf\nz Infinity\nw -infinity\n",
	"x 1 1234\ny 2 -5\nz 3\t+7\n",
	"x 1 \n",
	"x 1 12 \n",
	"x 1 12 junk\n",
	"x 1 1.5\n",
	"x 1 99999999999999999999\n",
	"x{} 1\ny { } 2\nz {a=\"b\",} 3\nw{ a = \"b\" , c=\"d\" } 4\n",
	"x{a=\"b\"}1\n",
	"x{a=\"b\" c=\"d\"} 1\n",
	"x{a=\"b\",a=\"c\"} 1\n",
	"x{__name__=\"y\"} 1\n",
	"x{a:b=\"c\"} 1\n",
	"x{1a=\"c\"} 1\n",
	"x{a=b} 1\n",
	"x{a=\"b\n",
	"x{a=\"\\\"q\\\" \\\\ \\n\"} 1\n",
	"x{a=\"bad \\t\"} 1\n",
	"x{a=\"\xff\"} 1\n",
	"x{a=\"b\"\n",
	"x{a=\"b\"",
	"x{a\n",
	"x{a=\n",
	"x\n",
	"x{a=\"b\"} \n",
	"1x 1\n",
	"-x 1\n",
	"x-y 1\n",
	"x\t1\n",
	"  \t x 1\n",
	"# TYPE s summary\ns{quantile=\"0.5\"} 1\ns{quantile=\"0.9\"} 2\ns_sum 10\ns_count 3\n",
	"# TYPE s summary\ns{a=\"1\",quantile=\"0.5\"} 1\ns{quantile=\"0.5\",a=\"1\"} 2\ns_sum{a=\"1\"} 10\ns_count{a=\"2\"} 3\n",
	"# TYPE s summary\ns{quantile=\"x\"} 1\n",
	"# TYPE s summary\ns{quantile=\"NaN\"} 1\ns_count -3\ns_count NaN\n",
	"# TYPE s summary\ns{quantile=\"0.5\",quantile=\"0.9\"} 1\n",
	"# TYPE s summary\ns{le=\"0.5\"} 1\ns_bucket{le=\"1\"} 2\n",
	"# TYPE s summary\n# HELP s_count count help\n# TYPE s_sum gauge\ns 1\n",
	"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n",
	"# TYPE h histogram\nh_bucket{le=\"1\"} 1.5\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n",
	"# TYPE h histogram\nh_bucket{le=\"1\"} -1\n",
	"# TYPE h histogram\nh_bucket{le=\"1\"} -1.5\n",
	"# TYPE h histogram\nh_count -2.5\n",
	"# TYPE h histogram\nh_count 2.5\nh_bucket{le=\"1\"} 1\n",
	"# TYPE h histogram\nh_bucket 1\nh{le=\"2\"} 3\nh_count{le=\"5\"} 3\nh_bucket{le=\"x\"} 1\n",
	"# TYPE h histogram\nh_bucket{a=\"1\",le=\"1\"} 1\nh_bucket{le=\"1\",a=\"2\"} 1\nh_sum{a=\"1\"} 1 123\nh_sum{a=\"1\"} 2 456\n",
	"# TYPE h histogram\nh_bucket{le=\"1\",le=\"2\"} 1\n",
	"# TYPE h histogram\nh_bucket{quantile=\"1\"} 1\n",
	"# TYPE h_count counter\nh_count 1\n# TYPE h histogram\nh_count 2\n",
	"# TYPE h counter\nh_count 1\nh_sum 2\nh_bucket 3\n",
	"_count 1\n_sum 2\n_bucket 3\n",
	"x_count 1\n# TYPE x summary\nx_count 2\n",
	"# TYPE x untyped\n# HELP x h\nx{a=\"\"} 1\nx{a=\"\"} 1\n",
	"# TYPE c counter\nc -1\nc 1e308\n",
	"x 1\n\n\ny 2\n",
	"x 1\n# HELP y\n",
	"x 1\n# HELP y   \n",
	"# HELP x hand\x83\xe8led\nx 1\n",
	"x 1\n# HELP x \\n\xff\n",
	"# HELP y \x83\xe8\nx 1\n",
	"# TYPE s summary\n# HELP s_count \xff\ns_count 1\n",
	"# HELP \"a.b\" \x83\xe8\n{\"a.b\"} 1\n",
	"# HELP \"a.b\" \x83\xe8\nx 1\n{\"c.d\"} 1\n",
}

// checkMatchesExpfmt decodes body with Decode (textParser) and with expfmt
// directly and fails unless both fail or both give equal families.
func checkMatchesExpfmt(t *testing.T, body string, utf8Names bool) {
	t.Helper()
	ours, errOurs := decodeFamilies(strings.NewReader(body), "", DecodeOptions{UTF8Names: utf8Names})
	theirs, errTheirs := decodeTextExpfmt(body, utf8Names, 0)
	if (errOurs != nil) != (errTheirs != nil) {
		t.Fatalf("body %q (utf8 %v): ours error %v, expfmt error %v", body, utf8Names, errOurs, errTheirs)
	}
	if errOurs != nil {
		if strings.Contains(errOurs.Error(), "\n") {
			t.Errorf("body %q: error %q spans several lines", body, errOurs)
		}
		return
	}
	if len(ours) != len(theirs) {
		t.Fatalf("body %q (utf8 %v): ours %v, expfmt %v", body, utf8Names, ours, theirs)
	}
	for i := range ours {
		if !proto.Equal(ours[i], theirs[i]) {
			t.Fatalf("body %q (utf8 %v): family %d: ours %v, expfmt %v", body, utf8Names, i, ours[i], theirs[i])
		}
	}
}

func TestTextParserMatchesExpfmt(t *testing.T) {
	seeds := append([]string{string(batchJobText(t))}, textSeeds...)
	for _, body := range seeds {
		for _, utf8Names := range []bool{false, true} {
			checkMatchesExpfmt(t, body, utf8Names)
		}
	}
}

// FuzzTextParserMatchesExpfmt holds textParser to expfmt's behaviour: for any
// body, both fail or both return equal families.
func FuzzTextParserMatchesExpfmt(f *testing.F) {
	f.Add(string(batchJobText(f)), false)
	for _, body := range textSeeds {
		f.Add(body, false)
		f.Add(body, true)
	}
	f.Fuzz(func(t *testing.T, body string, utf8Names bool) {
		checkMatchesExpfmt(t, body, utf8Names)
	})
}

// TestTextParserTakesTheFastPath guards against a change that would send
// ordinary bodies to expfmt unnoticed: the differential tests would still
// pass.
func TestTextParserTakesTheFastPath(t *testing.T) {
	for _, body := range []string{
		string(batchJobText(t)),
		"x{a=\"\\\"q\\\" \\\\ \\n\"} 1\n# HELP y a \\\\ b\ny 2\n",
	} {
		p := newTextParser()
		if _, err := p.parse(body); err != nil {
			t.Errorf("parse(%.40q…) = %v, want the fast path to succeed", body, err)
		}
	}
}
