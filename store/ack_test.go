package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/journal"
)

// The tests of this file pin "acknowledged means committed": every answer
// is sent after the commit holding its effect, and only committed changes
// are served. The log's commits are held, failed or made ambiguous by the
// test (heldLog), as a stalled disk or a lost etcd quorum would.

// answer is what a write returned.
type answer struct {
	pos journal.Position
	err error
}

// async runs a write in the background and returns where its answer lands.
func async(write func() (journal.Position, error)) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		pos, err := write()
		ch <- answer{pos, err}
	}()
	return ch
}

// noAnswer fails the test if a write held behind an uncommitted change was
// answered: it had nothing of its own that was durable. (It can only show
// that no answer came within a while; a correct store never answers.)
func noAnswer(t *testing.T, what string, ch <-chan answer) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("%s was answered (position %d, err %v) while the change it depends on is not committed", what, a.pos, a.err)
	case <-time.After(100 * time.Millisecond):
	}
}

// answered waits for a write's answer.
func answered(t *testing.T, what string, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		t.Fatalf("%s was never answered", what)
	}
	return answer{}
}

// served reports whether group k is visible to scrapes and the API.
func served(s *Store, k groupkey.Key) bool {
	inSnapshot := false
	sn := s.Snapshot()
	sn.Ascend(func(e Entry) bool {
		if e.GroupID() == k.ID() {
			inSnapshot = true
			return false
		}
		return true
	})
	sn.Release()
	inAPI := s.Group(k) != nil
	if inSnapshot != inAPI {
		panic(fmt.Sprintf("group %s: in a scrape %v, in the API %v", k, inSnapshot, inAPI))
	}
	return inAPI
}

func pushAsync(t *testing.T, s *Store, k groupkey.Key, text string) <-chan answer {
	fams := storetest.Families(t, text)
	return async(func() (journal.Position, error) {
		return s.Push(context.Background(), Push{Key: k, Method: Replace, Families: fams, Time: t0})
	})
}

func deleteAsync(s *Store, k groupkey.Key) <-chan answer {
	return async(func() (journal.Position, error) { return s.Delete(context.Background(), k) })
}

// failures are the ways a held commit ends without committing.
var failures = []struct {
	name string
	err  error
}{
	{"failed", errors.New("disk gone")},
	{"ambiguous", fmt.Errorf("etcd request timed out: %w", journal.ErrAmbiguous)},
}

// TestADeleteRacingAPendingDeleteWaitsForItsOwnCommit: DELETE a is
// pending when a second DELETE a arrives. Before, the second found the
// group gone from the store (the first had installed its removal before
// the log committed it) and was answered 202 at once, with no commit of its
// own; when the first then failed, a came back: an acknowledged DELETE
// lost.
func TestADeleteRacingAPendingDeleteWaitsForItsOwnCommit(t *testing.T) {
	for _, f := range failures {
		t.Run("the first one "+f.name, func(t *testing.T) {
			s := New(Options{})
			log := &heldLog{}
			s.SetJournal(log)
			a := storetest.Key("job", "a")
			put := pushAsync(t, s, a, "m 1\n")
			log.appended(t, 1).done <- nil
			if ans := answered(t, "PUT a", put); ans.err != nil || ans.pos != 1 {
				t.Fatalf("PUT a answered %+v, want position 1", ans)
			}

			first := deleteAsync(s, a)
			log.appended(t, 2)
			second := deleteAsync(s, a)
			noAnswer(t, "the second DELETE", second)
			if !served(s, a) {
				t.Fatal("a pending DELETE is served before it is committed")
			}
			log.commits[1].done <- f.err
			// The log makes no batch durable after a failed one.
			log.appended(t, 3).done <- f.err
			if ans := answered(t, "the first DELETE", first); ans.err == nil {
				t.Fatal("the first DELETE succeeded although its commit failed")
			}
			if ans := answered(t, "the second DELETE", second); ans.err == nil {
				t.Fatal("the second DELETE was acknowledged, but nothing removed a")
			}
			if !served(s, a) {
				t.Fatal("a is gone although no DELETE committed")
			}
		})
	}
	t.Run("both commit", func(t *testing.T) {
		s := New(Options{})
		log := &heldLog{}
		s.SetJournal(log)
		a := storetest.Key("job", "a")
		put := pushAsync(t, s, a, "m 1\n")
		log.appended(t, 1).done <- nil
		answered(t, "PUT a", put)
		first := deleteAsync(s, a)
		log.appended(t, 2)
		second := deleteAsync(s, a)
		log.appended(t, 3)
		noAnswer(t, "the second DELETE", second)
		log.commits[2].done <- nil // the later batch settles both
		if ans := answered(t, "the second DELETE", second); ans.err != nil || ans.pos != 3 {
			t.Fatalf("the second DELETE answered %+v, want position 3", ans)
		}
		if served(s, a) {
			t.Fatal("a is served after an acknowledged DELETE")
		}
		log.commits[1].done <- nil
		if ans := answered(t, "the first DELETE", first); ans.err != nil || ans.pos != 2 {
			t.Fatalf("the first DELETE answered %+v, want position 2", ans)
		}
	})
}

// TestADeleteOfAGroupWhosePushIsPendingWaits: PUT b is pending; DELETE b
// removes what the head holds and is answered only with its own commit; a
// failed PUT takes the DELETE with it, and b is never served.
func TestADeleteOfAGroupWhosePushIsPendingWaits(t *testing.T) {
	for _, f := range failures {
		t.Run("the PUT "+f.name, func(t *testing.T) {
			s := New(Options{})
			log := &heldLog{}
			s.SetJournal(log)
			b := storetest.Key("job", "b")
			put := pushAsync(t, s, b, "m 1\n")
			log.appended(t, 1)
			del := deleteAsync(s, b)
			log.appended(t, 2)
			noAnswer(t, "the DELETE", del)
			if served(s, b) {
				t.Fatal("a pending PUT is served")
			}
			log.commits[0].done <- f.err
			log.commits[1].done <- f.err
			if ans := answered(t, "the PUT", put); ans.err == nil {
				t.Fatal("the PUT succeeded although its commit failed")
			}
			if ans := answered(t, "the DELETE", del); ans.err == nil {
				t.Fatal("the DELETE succeeded although its commit failed")
			}
			if served(s, b) {
				t.Fatal("b is served although nothing committed it")
			}
			// The head is back where it was: b can be pushed again and
			// the index holds no trace of the rolled-back PUT.
			again := pushAsync(t, s, b, "m 2\n")
			log.appended(t, 3).done <- nil
			if ans := answered(t, "PUT b again", again); ans.err != nil {
				t.Fatal(ans.err)
			}
			if !served(s, b) {
				t.Fatal("a committed PUT is not served")
			}
		})
	}
}

// TestNothingUncommittedIsServed: a pending PUT is not served; when its
// commit fails it never appears, and what was served before stays. Before,
// a scrape showed the pending value, which then went back in time.
func TestNothingUncommittedIsServed(t *testing.T) {
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			s := New(Options{})
			log := &heldLog{}
			s.SetJournal(log)
			a := storetest.Key("job", "a")
			put := pushAsync(t, s, a, "m 655\n")
			log.appended(t, 1).done <- nil
			answered(t, "PUT 655", put)
			before := string(scrapeBytes(t, s, exposition.EncodingText))

			pending := pushAsync(t, s, a, "m 670\n")
			log.appended(t, 2)
			if got := string(scrapeBytes(t, s, exposition.EncodingText)); got != before {
				t.Fatalf("a scrape shows an uncommitted push:\n%s\nwant\n%s", got, before)
			}
			log.commits[1].done <- f.err
			if ans := answered(t, "PUT 670", pending); ans.err == nil {
				t.Fatal("PUT 670 succeeded although its commit failed")
			}
			if got := string(scrapeBytes(t, s, exposition.EncodingText)); got != before {
				t.Fatalf("after the failed commit a scrape shows:\n%s\nwant what it showed before:\n%s", got, before)
			}
		})
	}
}

// TestTwoConflictingPushesOfOneBatchDoNotBothPass: validation reads the head,
// so a push conflicting with a pending one is refused before either is
// committed.
func TestTwoConflictingPushesOfOneBatchDoNotBothPass(t *testing.T) {
	s := New(Options{})
	log := &heldLog{}
	s.SetJournal(log)
	first := pushAsync(t, s, storetest.Key("job", "a"), "m{instance=\"x\"} 1\n")
	log.appended(t, 1)
	second := pushAsync(t, s, storetest.Key("job", "a", "instance", "x"), "m 2\n")
	// The second is refused; recording its failure time creates group
	// a/x, a batch of its own.
	log.appended(t, 2)
	log.commits[0].done <- nil
	log.commits[1].done <- nil
	if ans := answered(t, "the first push", first); ans.err != nil {
		t.Fatal(ans.err)
	}
	var rej *admission.Error
	if ans := answered(t, "the second push", second); !errors.As(ans.err, &rej) || rej.Class != admission.Refused {
		t.Fatalf("the conflicting push answered %v, want a rejection", ans.err)
	}
}

// TestAnAnswerCarriesItsCommitsPosition: the position a write returns is the
// one its own batch was committed at.
func TestAnAnswerCarriesItsCommitsPosition(t *testing.T) {
	s := New(Options{})
	log := &heldLog{}
	s.SetJournal(log)
	var chans []<-chan answer
	for i := range 3 {
		chans = append(chans, pushAsync(t, s, storetest.Key("job", fmt.Sprint(i)), "m 1\n"))
		log.appended(t, i+1)
	}
	wipe := async(func() (journal.Position, error) { return s.Wipe(context.Background()) })
	log.appended(t, 4)
	for _, c := range log.commits {
		c.done <- nil
	}
	got := map[journal.Position]bool{}
	for i, ch := range chans {
		got[answered(t, fmt.Sprint("push ", i), ch).pos] = true
	}
	if !got[1] || !got[2] || !got[3] {
		t.Errorf("pushes answered positions %v, want 1, 2 and 3", got)
	}
	if ans := answered(t, "wipe", wipe); ans.err != nil || ans.pos != 4 {
		t.Errorf("wipe answered %+v, want position 4", ans)
	}
	if st := s.Stats(); st.Groups != 0 {
		t.Errorf("%d groups after a committed wipe", st.Groups)
	}
}
