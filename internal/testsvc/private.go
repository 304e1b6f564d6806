package testsvc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Server is a private database server owned by one test: it runs on its own
// port in the test's temp dir, and the test may Stop and Start it at will.
// It is killed when the test ends.
type Server struct {
	// URL is the server's DSN (postgres://...) or URL (redis://...).
	URL string

	t     testing.TB
	start func() error
	stop  func() error
	up    bool
}

// Stop shuts the server down immediately, like a crash of the machine's
// service (PostgreSQL: immediate mode; Redis: SHUTDOWN NOSAVE).
func (s *Server) Stop() {
	s.t.Helper()
	if !s.up {
		return
	}
	if err := s.stop(); err != nil {
		s.t.Fatalf("testsvc: stop %s: %v", s.URL, err)
	}
	s.up = false
}

// Start starts the server again and waits until it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	if s.up {
		return
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("testsvc: start %s: %v", s.URL, err)
	}
	s.up = true
}

// PrivateRedis starts a Redis server of its own for the test, keeping
// nothing on disk. It skips (or fails, when services are required) if
// redis-server is not installed.
func PrivateRedis(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Unavailable(t, "redis-server", err)
	}
	port := freePort(t)
	dir := t.TempDir()
	host := "127.0.0.1:" + strconv.Itoa(port)
	var cmd *exec.Cmd
	s := &Server{URL: "redis://" + host + "/0", t: t}
	s.start = func() error {
		cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no", "--dir", dir)
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return waitPort(ctx, host)
	}
	s.stop = func() error {
		if err := cmd.Process.Kill(); err != nil {
			return err
		}
		_ = cmd.Wait()
		return nil
	}
	s.Start()
	t.Cleanup(func() {
		if s.up {
			_ = s.stop()
		}
	})
	return s
}

// PrivatePostgres starts a PostgreSQL cluster of its own for the test
// (initdb in the test's temp dir, trust auth, fsync off), with a database
// named test. It skips (or fails, when services are required) if the
// PostgreSQL server binaries are not installed.
func PrivatePostgres(t testing.TB) *Server {
	t.Helper()
	bin, err := pgBin()
	if err != nil {
		Unavailable(t, "PostgreSQL server binaries", err)
	}
	port := freePort(t)
	dir, err := os.MkdirTemp("", "recall-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// PostgreSQL refuses to run as root: run it as the postgres user then.
	asUser := func(name string, args ...string) *exec.Cmd {
		path := filepath.Join(bin, name)
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
		}
		return exec.Command(path, args...)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			Unavailable(t, "the postgres system user", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := asUser("initdb", "-D", data, "-A", "trust", "-U", "postgres").CombinedOutput(); err != nil {
		t.Fatalf("testsvc: initdb: %v\n%s", err, out)
	}
	host := "127.0.0.1:" + strconv.Itoa(port)
	s := &Server{URL: fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable", host), t: t}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, dir)
	s.start = func() error {
		if out, err := asUser("pg_ctl", "-D", data, "-o", opts, "-w", "-l", filepath.Join(dir, "log"), "start").CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	s.stop = func() error {
		if out, err := asUser("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	s.Start()
	t.Cleanup(func() {
		if s.up {
			_ = s.stop()
		}
	})
	if out, err := exec.Command("psql", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "-d", "postgres", "-qc", "CREATE DATABASE test").CombinedOutput(); err != nil {
		t.Fatalf("testsvc: create database: %v\n%s", err, out)
	}
	return s
}

// pgBin finds the newest installed PostgreSQL server's bin directory.
func pgBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("initdb not found under /usr/lib/postgresql/*/bin or on PATH")
}
