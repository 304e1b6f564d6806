package fsys

import (
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// BootID names the running boot of the machine: the kernel's boot time, to
// the microsecond. An index journal written in another boot may have lost
// its last lines to a power failure (it is never fsynced), so it is trusted
// only when its header names this boot.
var BootID = sync.OnceValue(func() string {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return ""
	}
	return strconv.FormatInt(tv.Sec, 10) + "." + strconv.FormatInt(int64(tv.Usec), 10)
})
