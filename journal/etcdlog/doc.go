// Package etcdlog keeps pushgate's change log in etcd, so that several
// replicas serve the same groups and survive the loss of a machine (cluster
// mode, DESIGN §6).
//
// Keys, all under Config.Prefix (default "/pushgate/"):
//
//	groups/<group id>  one key per group; the value is the store's encoded
//	                   group, as it is when it compresses its own metrics
//	                   (groupcodec.Compressed: version 3 on), else
//	                   s2-compressed (every value of an earlier version)
//	head               written by every commit; its value names the writer
//	                   and the batch ("<lease id hex>/<batch seq>"), so a
//	                   replica tells its own batches from the others'
//	leader/<lease id>  the election (go.etcd.io/etcd/client/v3/concurrency);
//	                   the value is the leader's advertised URL
//	meta               JSON: the codec version and the settings that change
//	                   what a push is accepted; every replica must agree,
//	                   except that one reading the recorded codec version
//	                   and writing a later one raises it (Meta)
//
// One replica at a time writes: the leader. It leads in terms. A term
// begins when Campaign has won the election and written a barrier to head,
// fenced by the election key, and Follow has delivered that barrier to the
// store. From then on, each batch is one transaction
//
//	If(CreateRevision(election key) == term's, ModRevision(head) == last commit's)
//	Then(puts and deletes of groups/..., put head)
//
// so that a deposed leader's late commit, and any commit not built on the
// state the leader's store holds, fails instead of applying. A term ends at
// the first failed commit, when the election session is lost (its lease
// keepalives unanswered for the TTL), or on Resign or Close; the replica
// then rebuilds its store from Load and campaigns again.
//
// Appends are committed in groups: one transaction in flight, the next
// collecting meanwhile, each holding at most 127 group operations and about
// 1.4 MiB (etcd's default limits are 128 operations and 1.5 MiB per
// request), several operations on one group in a transaction coalesced into
// the last.
//
// Every replica, the leader too, follows the log through one watch on the
// groups and head keys and applies each revision as one journal.Batch.
//
// One etcd member that hangs stops no write for longer than about two
// seconds: with several endpoints, each member is probed twice a second and
// the client's connections to one that does not answer are closed (see
// memberProbeInterval), a commit that gets no answer is sent again (see
// commitAttempt), and the election lease is renewed by the Log itself,
// request by request (see session).
package etcdlog
