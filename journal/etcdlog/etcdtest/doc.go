// Package etcdtest tests journal/etcdlog against etcd members embedded in
// the test process (go.etcd.io/etcd/server/v3/embed) on loopback ports. It
// is a module of its own, so that the gateway's go.mod requires only etcd's
// client and its binary links no server code.
package etcdtest
