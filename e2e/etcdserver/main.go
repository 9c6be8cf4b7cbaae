// Command etcdserver is etcd itself (go.etcd.io/etcd/server/v3/etcdmain),
// built by scripts/etcd.sh for pushgate's cluster end-to-end tests. It is
// its own module so that pushgate's module never requires the etcd server.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
