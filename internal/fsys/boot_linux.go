package fsys

import (
	"os"
	"strings"
	"sync"
)

// BootID names the running boot of the machine: the kernel's random
// boot_id, new at every boot. An index journal written in another boot may
// have lost its last lines to a power failure (it is never fsynced), so it
// is trusted only when its header names this boot.
var BootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})
