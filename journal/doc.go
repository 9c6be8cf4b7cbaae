// Package journal holds the types and interfaces of pushgate's change log,
// with no backend: a store appends batches of Ops to a Log and waits on the
// returned Commit, whose Position orders it; a Snapshotter hands over the
// whole state at one position; a Follower delivers the batches committed
// after a position, each marked when this process committed it.
//
// Backends live in packages of their own: filejournal (one local file, the
// default, --persistence.file) and etcdlog (an etcd cluster, shared by the
// replicas of a highly available gateway). A store without a log keeps its
// state in memory only.
package journal
