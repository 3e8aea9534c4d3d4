package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/process/sandbox/internal/tenancy"
)

// The new root is built the way bubblewrap builds it: a tmpfs becomes the
// root with the host's / reachable under /oldroot, the sandbox's root is
// assembled in /newroot (a tmpfs holding read-only binds of the host's
// top-level entries, and fresh /proc, /dev, /sys and /tmp), and a second
// pivot_root moves into it and detaches the host's.
const (
	oldRoot = "/oldroot"
	newRoot = "/newroot"
)

// setupTmpfsSize bounds the tmpfs mounts that hold only mount points and
// links (the scratch root, the new root, /dev, /sys, hidden directories):
// all but the scratch root are read-only once the root is built.
const setupTmpfsSize = "size=4m"

// tmpfsData is a tmpfs's mount data: mode and size in bytes.
func tmpfsData(mode string, size int64) string { return fmt.Sprintf("mode=%s,size=%d", mode, size) }

// fresh are the top-level entries the sandbox gets its own of.
var fresh = map[string]bool{"proc": true, "dev": true, "sys": true, "tmp": true}

// hostSocketDirs are the host directories where daemons keep their Unix
// sockets (the system bus, systemd's, docker's and containerd's, the
// databases', libvirt's, LXD's and Incus's, the kubelet's, the mail
// system's): each is hidden in every sandbox by an empty read-only tmpfs,
// so that a socket a host daemon left connectable by anyone (0777) is not
// reachable through the read-only root. /tmp (X11's and tmux's sockets) is
// the sandbox's own and /dev (/dev/log) is fresh already; abstract sockets
// belong to the network namespace. A bind the daemon asks for below one
// of them is still made. docs/security.md has the survey.
var hostSocketDirs = []string{
	"/run", "/var/run", "/var/lib/mysql", "/var/lib/lxd", "/var/lib/incus",
	"/var/lib/kubelet", "/var/snap/lxd", "/var/spool/postfix",
}

// keptThrough are host files that stay visible when a hidden socket
// directory holds their target: /etc/resolv.conf is often a link into
// /run (systemd-resolved), and a sandbox on the host's network resolves
// names with it.
var keptThrough = []string{"/etc/resolv.conf"}

// devices are bound from the host's /dev.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// buildRoot sets up the mount namespace and pivots into the new root. It
// returns the stage that failed.
func buildRoot(ms mountSet) (string, error) {
	if err := stageTmpfsRoot(); err != nil {
		return StageMounts, err
	}
	if err := mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,"+setupTmpfsSize); err != nil {
		return StageMounts, err
	}
	if err := bindHostRoot(); err != nil {
		return StageMounts, err
	}
	if err := mkdirMount("proc", newRoot+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return StageProc, err
	}
	tmp := scratchMounts(ms.Storage)[0]
	if err := mkdirMount("tmpfs", newRoot+tmp.Dir, "tmpfs", tmp.Flags, tmp.Data); err != nil {
		return StageMounts, err
	}
	if err := mkdirMount("tmpfs", newRoot+"/sys", "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0555,"+setupTmpfsSize); err != nil {
		return StageMounts, err
	}
	if stage, err := buildDev(ms.Storage); err != nil {
		return stage, err
	}
	empty := "/empty"
	if err := os.WriteFile(empty, nil, 0o444); err != nil {
		return StageMounts, err
	}
	kept := keptTargets(ms.Keep)
	var hidden []string
	seen := map[string]bool{}
	for _, h := range append(append([]string(nil), hostSocketDirs...), ms.Hide...) {
		dst, err := resolveIn(newRoot, h)
		if err != nil {
			return StageMounts, err
		}
		if seen[dst] {
			continue // /var/run is a link to /run on most hosts
		}
		seen[dst] = true
		fi, err := os.Stat(dst)
		switch {
		case errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
			// Out of the init's reach is out of the harness's: the init is
			// root of the user namespace, the harness less.
			continue
		case err != nil:
			return StageMounts, fmt.Errorf("hide %s: %w", h, err)
		case fi.IsDir():
			if err := mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,"+setupTmpfsSize); err != nil {
				return StageMounts, fmt.Errorf("hide %s: %w", h, err)
			}
			hidden = append(hidden, dst)
		default:
			if err := mount(empty, dst, "", unix.MS_BIND, ""); err != nil {
				return StageMounts, fmt.Errorf("hide %s: %w", h, err)
			}
			if err := setattr(dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false); err != nil {
				return StageMounts, err
			}
		}
	}
	for _, k := range kept {
		if err := keep(k, hidden); err != nil {
			return StageMounts, err
		}
	}
	for _, b := range ms.Binds {
		if err := bind(b); err != nil {
			return StageMounts, err
		}
		if b.FD != 0 {
			unix.Close(b.FD)
		}
	}
	for _, d := range append(hidden, newRoot+"/dev", newRoot) {
		if err := setattr(d, unix.MOUNT_ATTR_RDONLY, false); err != nil {
			return StageMounts, err
		}
	}
	if err := pivotInto(newRoot); err != nil {
		return StageMounts, err
	}
	return "", nil
}

// keptTargets resolves each file of keep (keptThrough) to its target
// inside the new root, before anything is hidden (a target that is missing
// or not a regular file is left out).
func keptTargets(keep []string) []string {
	var out []string
	for _, k := range keep {
		dst, err := resolveIn(newRoot, k)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() {
			out = append(out, strings.TrimPrefix(dst, newRoot))
		}
	}
	return out
}

// keep binds the host file target (a path inside the root) back, read-only,
// when a hidden directory covers it.
func keep(target string, hidden []string) error {
	for _, h := range hidden {
		if !strings.HasPrefix(newRoot+target, h+"/") {
			continue
		}
		dst := newRoot + target
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("keep %s: %w", target, err)
		}
		if err := os.WriteFile(dst, nil, 0o444); err != nil {
			return fmt.Errorf("keep %s: %w", target, err)
		}
		if err := mount(oldRoot+target, dst, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return setattr(dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false)
	}
	return nil
}

func mount(src, dst, fstype string, flags uintptr, data string) error {
	if err := unix.Mount(src, dst, fstype, flags, data); err != nil {
		what := fstype
		if what == "" {
			what = src
		}
		return fmt.Errorf("mount %s on %s: %w", what, dst, err)
	}
	return nil
}

func mkdirMount(src, dst, fstype string, flags uintptr, data string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return mount(src, dst, fstype, flags, data)
}

// setattr changes a mount's flags (mount_setattr, Linux 5.12+): unlike a
// remount it keeps the flags the kernel locked on the host's mounts.
func setattr(p string, set uint64, recursive bool) error {
	var flags uint
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	if err := unix.MountSetattr(-1, p, flags, &unix.MountAttr{Attr_set: set}); err != nil {
		return fmt.Errorf("set mount flags of %s: %w", p, err)
	}
	return nil
}

// stageTmpfsRoot makes every mount private and pivots into a scratch tmpfs,
// the host's root then under /oldroot.
func stageTmpfsRoot() error {
	if err := mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	base := "/tmp"
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		base = "/"
		for _, c := range []string{"/mnt", "/run", "/var"} {
			if fi, err := os.Stat(c); err == nil && fi.IsDir() {
				base = c
				break
			}
		}
	}
	if err := mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,"+setupTmpfsSize); err != nil {
		return err
	}
	for _, d := range []string{base + oldRoot, base + newRoot} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.PivotRoot(base, base+oldRoot); err != nil {
		return fmt.Errorf("pivot_root to the scratch root: %w", err)
	}
	return os.Chdir("/")
}

// bindHostRoot binds each top-level entry of the host's root read-only into
// the new root (symlinks are copied).
func bindHostRoot() error {
	entries, err := os.ReadDir(oldRoot)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if fresh[name] {
			continue
		}
		src, dst := oldRoot+"/"+name, newRoot+"/"+name
		switch {
		case e.Type()&os.ModeSymlink != 0:
			t, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if err := os.Symlink(t, dst); err != nil {
				return err
			}
			continue
		case e.IsDir():
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
		default:
			if err := os.WriteFile(dst, nil, 0o444); err != nil {
				return err
			}
		}
		if err := mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		if err := setattr(dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, true); err != nil {
			return err
		}
	}
	return nil
}

// scratchMounts are the sandbox's own writable file systems, /tmp and
// /dev/shm, as the init mounts them (and a recycle mounts them again).
func scratchMounts(st Storage) []tenancy.Mount {
	return []tenancy.Mount{
		{Dir: "/tmp", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: tmpfsData("1777", st.TmpBytes)},
		{Dir: "/dev/shm", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, Data: tmpfsData("1777", st.ShmBytes)},
	}
}

// buildDev makes a minimal /dev: a few host devices, a devpts of its own
// (at most st.PTYs ptys) with ptmx, shm (st.ShmBytes) and the usual links.
func buildDev(st Storage) (string, error) {
	dev := newRoot + "/dev"
	if err := mkdirMount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,"+setupTmpfsSize); err != nil {
		return StageMounts, err
	}
	for _, d := range devices {
		src := oldRoot + "/dev/" + d
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := os.WriteFile(dev+"/"+d, nil, 0o666); err != nil {
			return StageMounts, err
		}
		if err := mount(src, dev+"/"+d, "", unix.MS_BIND, ""); err != nil {
			return StageMounts, err
		}
	}
	if err := mkdirMount("devpts", dev+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, fmt.Sprintf("newinstance,ptmxmode=0666,mode=0620,max=%d", st.PTYs)); err != nil {
		return StageDevpts, err
	}
	shm := scratchMounts(st)[1]
	if err := mkdirMount("tmpfs", newRoot+shm.Dir, "tmpfs", shm.Flags, shm.Data); err != nil {
		return StageMounts, err
	}
	for link, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, dev+"/"+link); err != nil {
			return StageMounts, err
		}
	}
	return "", nil
}

// bind makes b.Src visible at b.Dst (or its own path) inside: the
// detached mount the daemon cloned (b.FD), or the path.
func bind(b bindSpec) error {
	src := fmt.Sprintf("%s/proc/self/fd/%d", newRoot, b.FD)
	if b.FD == 0 {
		var err error
		if src, err = resolveIn(oldRoot, b.Src); err != nil {
			return err
		}
	}
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("bind %s: %w", b.Src, err)
	}
	to := b.Dst
	if to == "" {
		to = b.Src
	}
	dst, err := resolveIn(newRoot, to)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("bind %s: no mount point %s: %w", b.Src, to, err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("bind %s: no mount point %s: %w", b.Src, to, err)
		}
		if _, err := os.Stat(dst); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(dst, nil, 0o444); err != nil {
				return fmt.Errorf("bind %s: no mount point %s: %w", b.Src, to, err)
			}
		}
	}
	if b.FD != 0 {
		if err := unix.MoveMount(b.FD, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("attach %s at %s: %w", b.Src, to, err)
		}
	} else if err := mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if !b.Writable {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	return setattr(dst, attr, true)
}

// pivotInto makes root the root and detaches the old one (stacked on the
// new one by pivot_root(".", ".")).
func pivotInto(root string) error {
	if err := os.Chdir(root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into the sandbox root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	return os.Chdir("/")
}

// resolveIn returns root joined with p, with every symlink along p resolved
// as if root were /: an absolute link restarts at root, and ".." never
// climbs above it. Components that do not exist are kept as given.
func resolveIn(root, p string) (string, error) {
	rest := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	cur := "/"
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		if c == "" || c == "." {
			continue
		}
		next := path.Join(cur, c)
		fi, err := os.Lstat(root + next)
		if err != nil {
			return root + path.Join(append([]string{next}, rest...)...), nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 {
			return "", fmt.Errorf("resolve %s: too many symbolic links", p)
		}
		t, err := os.Readlink(root + next)
		if err != nil {
			return "", err
		}
		if path.IsAbs(t) {
			cur = "/"
		}
		rest = append(strings.Split(strings.Trim(t, "/"), "/"), rest...)
	}
	return root + cur, nil
}
