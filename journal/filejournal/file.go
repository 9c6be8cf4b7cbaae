package filejournal

import (
	"io"
	"os"
	"path/filepath"
)

// file is the part of *os.File the journal uses. Every disk operation goes
// through file and fileSystem so that tests can inject write and fsync
// failures.
type file interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
	Name() string
}

// fileSystem is the part of the os package the journal uses.
type fileSystem interface {
	OpenFile(name string, flag int, perm os.FileMode) (file, error)
	// CreateTemp creates a new file named pattern with "*" replaced by a
	// random string, in dir, with mode 0600.
	CreateTemp(dir, pattern string) (file, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	ReadDir(name string) ([]os.DirEntry, error)
	// SyncDir fsyncs a directory so that creations and renames in it
	// survive power loss.
	SyncDir(dir string) error
}

// osFS is the real file system.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) CreateTemp(dir, pattern string) (file, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Rename(oldpath, newpath string) error       { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error                   { return os.Remove(name) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// fileWriter is a sequential io.Writer over a file's WriteAt.
type fileWriter struct {
	f   file
	off int64
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}
