package testsvc

import (
	"net/url"
	"testing"
)

func TestPrivateServersStopAndStart(t *testing.T) {
	for name, start := range map[string]func(testing.TB) *Server{"redis": PrivateRedis, "postgres": PrivatePostgres} {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			u, _ := url.Parse(s.URL)
			if err := dial(u.Host); err != nil {
				t.Fatalf("server not answering after start: %v", err)
			}
			s.Stop()
			if err := dial(u.Host); err == nil {
				t.Fatal("server still answering after Stop")
			}
			s.Start()
			if err := dial(u.Host); err != nil {
				t.Fatalf("server not answering after restart: %v", err)
			}
		})
	}
}
