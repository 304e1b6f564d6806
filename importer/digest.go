package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
)

// digest is the SHA-256 of the bytes of a transcript consumed so far,
// taken as the lines are read. A record that an earlier import wrote holds
// the digest of the bytes it consumed; when its offset lies ahead, the
// digest is checked as the reading passes it (a checkpoint), and when it
// lies behind, the prefix is read again (prefixDigest).
type digest struct {
	h      hash.Hash
	n      int64        // bytes hashed
	checks []checkpoint // by offset
}

// checkpoint is an offset whose digest a writer waits to check.
type checkpoint struct {
	at   int64
	want string
	w    *writer
}

func newDigest() *digest { return &digest{h: sha256.New()} }

// write hashes the next bytes of the transcript, checking each checkpoint
// on the way at its exact offset.
func (d *digest) write(p []byte) {
	for len(d.checks) > 0 && d.checks[0].at <= d.n+int64(len(p)) {
		c := d.checks[0]
		k := c.at - d.n
		d.h.Write(p[:k])
		d.n += k
		p = p[k:]
		d.checks = d.checks[1:]
		c.w.checked(c.at, d.sum() == c.want)
	}
	d.h.Write(p)
	d.n += int64(len(p))
}

// check registers a checkpoint at or after the bytes hashed so far.
func (d *digest) check(c checkpoint) {
	if c.at == d.n {
		c.w.checked(c.at, d.sum() == c.want)
		return
	}
	i := len(d.checks)
	for i > 0 && d.checks[i-1].at > c.at {
		i--
	}
	d.checks = append(d.checks, checkpoint{})
	copy(d.checks[i+1:], d.checks[i:])
	d.checks[i] = c
}

// sum returns the digest of the bytes hashed so far, in hex. It leaves
// the hash as it is, so a writer takes it at the end of a line to have the
// digest of a batch that ends there once the next line is read.
func (d *digest) sum() string {
	return hex.EncodeToString(d.h.Sum(nil))
}

// prefixDigest reads the first n bytes of a transcript again (open opens
// it) and returns their digest, or ok false when it has fewer.
func prefixDigest(open func() (io.ReadCloser, error), n int64) (sum string, ok bool, err error) {
	f, err := open()
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, f, n); err != nil {
		if errors.Is(err, io.EOF) {
			return "", false, nil
		}
		return "", false, err
	}
	return hex.EncodeToString(h.Sum(nil)), true, nil
}
