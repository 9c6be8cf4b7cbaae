// Package cluster runs a pushgate replica of a cluster whose state lives in
// a shared log (the etcd backend, journal/etcdlog): it loads the log into a
// fresh store, follows the log's changes into it, is ready once it has
// applied everything the log had committed when it asked, and campaigns to
// be the one replica that takes writes.
//
// # A replica's life
//
//	load ─▶ swap the store in ─▶ follow (ready once current) ─▶ campaign ─▶ lead (take writes)
//	  ▲                                                                        │
//	  └──── a compacted watch, or the end of a term (a failed commit, a ◀──────┘
//	        lost session): not ready, writes closed, rebuild into a fresh store
//
// Every store the replica builds reads the log the same way: Load at one
// position, then Follow from there. Batches this replica's log committed
// (journal.Batch.Own) were installed by the store when they were pushed and
// are only marked applied; every other batch goes through store.Apply. A
// term ends at the first failed commit, after which the log takes no write
// until the store that will take them was rebuilt from what the log holds:
// the failed batch may have committed after all (an ambiguous outcome), and
// the store rolled it back.
//
// # Writes
//
// Only the leading replica's store takes writes (BeginWrite); the others
// forward them to the leader (web's forwarding handler), which answers with
// the position its commit reached (Committed), and answer once their own
// store applied it (WaitApplied): a client reads its own write from the
// replica it wrote through.
package cluster
