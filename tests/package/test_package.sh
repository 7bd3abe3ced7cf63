#!/usr/bin/env bash
# The Debian packages for real (issue 16):
#   - scripts/package.sh builds them, lintian reports no error; the files
#     and modes each package must carry (the mount helper in /sbin, the
#     unit, the gateway's settings root-only);
#   - a fresh Debian 12 root (debootstrap minbase, its downloads cached in
#     $S3R_DEBOOTSTRAP_CACHE) gets them with apt, which fetches their
#     dependencies; entered with chroot, /proc, /sys and /dev bound in;
#   - every installed man page renders with `man --warnings -l` silently;
#     `systemd-analyze verify` accepts the unit;
#   - from inside: three fstab lines, two for the same bucket (`s3rdmafs`
#     through mount.s3rdmafs, `fuse.s3rdmafs` through fuse3's mount.fuse3)
#     and one for every bucket (all-buckets), keys in a 0600
#     /etc/s3rdmafs.json, mounted by `mount -a`; a file written through
#     one is read through the other and by the packaged CLI; the stats in
#     Prometheus's format;
#   - the packaged gateway started with its unit's ExecStart and settings
#     file, without CAP_SYS_PTRACE and with no_new_privs as the unit has
#     it; a root mount through it with rdma.transport=cma: bytes by cma;
#   - a program compiled (on the host) against the packaged header and
#     library, found by pkg-config, reads a file of the mount with
#     libs3rdmafs inside the root;
#   - python3-s3rdmafs: `import s3rdmafs` works in the root;
#   - umount, then apt purges the packages cleanly.
#
#   test_package.sh BUILD_BIN_DIR   (root: chroot, mounts)
set -euo pipefail
# shellcheck source=tests/lib/test.sh
. "$(dirname "$0")/../lib/test.sh"
fs_test_setup "$1" package debs
src=$(cd "$here/../.." && pwd)
# (canonical, so that it matches /proc/self/mounts, which has resolved
# paths and escapes blanks)
root=$(realpath "$tmp")/root
case $root in *[[:space:]\\]*) echo "not ok - a plain path for the root: $root"; exit 1 ;; esac
cache=${S3R_DEBOOTSTRAP_CACHE:-/var/cache/s3rdmafs-debootstrap}
# the Debian mirror: $S3R_DEBIAN_MIRROR, else the first one this host's apt
# uses (deb822 URIs: or a one-line "deb URI bookworm" source)
host_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f"
  done | head -n 1
  [ -f /etc/apt/sources.list ] &&
    awk '$1 == "deb" && $0 ~ /bookworm/ && $0 !~ /security/ {
           for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:/) { print $i; exit } }' /etc/apt/sources.list
  return 0
}
mirror=${S3R_DEBIAN_MIRROR:-$(host_mirror | head -n 1)}
gw_pid=""

[ "$(id -u)" -eq 0 ] || { echo "# skip: needs root (chroot, mounts)"; exit 77; }
[ -n "$mirror" ] || {
  echo "not ok - a Debian mirror: none in /etc/apt/sources* (set S3R_DEBIAN_MIRROR)"
  exit 1
}
for t in debootstrap dpkg-buildpackage lintian go-md2man man systemd-analyze; do
  command -v "$t" >/dev/null || {
    echo "not ok - $t installed (scripts/setup.sh installs it)"
    exit 1
  }
done

# in the root: a command with a clean environment (and the S3 keys)
in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 "$@"
}
# every mount under the root, deepest first
root_mounts() { awk -v r="$root" 'index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r; }
package_cleanup() {
  local rc=$? m
  set +e
  [ -z "$gw_pid" ] || kill "$gw_pid" 2>/dev/null
  for m in $(root_mounts); do umount "$m" 2>/dev/null || umount -l "$m"; done
  if [ -n "$(root_mounts)" ]; then
    # never delete a tree that still holds the host's /dev or /proc
    echo "# still mounted under $root: $(root_mounts | tr '\n' ' '); left in place"
    tmp=/nonexistent-s3r-package-kept
    rc=1
  else
    # (and never cross into a file system mounted there meanwhile)
    rm -rf --one-file-system "$root"
  fi
  (exit "$rc")
  fs_cleanup
}
trap package_cleanup EXIT
t0=$SECONDS

# ---- build: the packages built ----
case_build() {
debs=$tmp/debs
check "scripts/package.sh builds the packages, lintian finds no error" \
  "$src/scripts/package.sh" "$debs" --no-check
[ "$fail" -eq 0 ] || exit 1
ver=$(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
deb() { echo "$debs/${1}_${ver}_$arch.deb"; }
# has PACKAGE MODE PATH: the package holds PATH with permissions MODE (a
# page that only sources another, .so, is a symlink: dh_installman)
has() {
  dpkg-deb -c "$(deb "$1")" | awk -v p="./$3" -v m="$2" \
    '$6 == p && substr($1, 1, length(m)) == m { f = 1 } END { exit !f }' ||
    { echo "# $1 lacks $3 ($2)"; return 1; }
}
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
files_fs() {
  has s3rdmafs -rwxr-xr-x usr/bin/s3rdmafs &&
    has s3rdmafs -rwxr-xr-x usr/bin/s3rdma-cli &&
    has s3rdmafs -rwxr-xr-x sbin/mount.s3rdmafs &&
    has s3rdmafs -rw-r--r-- usr/share/man/man1/s3rdmafs.1.gz &&
    has s3rdmafs -rw-r--r-- usr/share/man/man5/s3rdmafs.json.5.gz &&
    has s3rdmafs -rw-r--r-- usr/share/man/man8/mount.s3rdmafs.8.gz &&
    has s3rdmafs -rw-r--r-- usr/share/doc/s3rdmafs/examples/s3rdmafs.example.json
}
files_gw() {
  has s3rdma-gateway -rwxr-xr-x usr/sbin/s3rdma-gateway &&
    has s3rdma-gateway -rw-r--r-- lib/systemd/system/s3rdma-gateway.service &&
    has s3rdma-gateway -rw------- etc/s3rdma-gateway/gateway.env &&
    has s3rdma-gateway -rw-r--r-- usr/share/man/man8/s3rdma-gateway.8.gz
}
files_lib() {
  has libs3rdmafs0 -rw-r--r-- "usr/lib/$ma/libs3rdmafs.so.$ver" &&
    has libs3rdmafs-dev -rw-r--r-- usr/include/s3rdmafs.h &&
    has libs3rdmafs-dev -rw-r--r-- "usr/lib/$ma/pkgconfig/s3rdmafs.pc" &&
    has libs3rdmafs-dev -rw-r--r-- usr/share/man/man3/s3rdmafs.3.gz &&
    has libs3rdmafs-dev lrwxrwxrwx usr/share/man/man3/s3rdmafs_gpu_read.3.gz
}
check "s3rdmafs: daemon, CLI, mount helper in /sbin, man pages, example" files_fs
check "s3rdma-gateway: gateway in sbin, unit, settings file 0600" files_gw
check "libs3rdmafs0 and -dev: library, header, pkg-config file, man pages" files_lib
files_py() {
  has python3-s3rdmafs -rw-r--r-- usr/lib/python3/dist-packages/s3rdmafs/__init__.py &&
    # grep -c, not -q: -q stops reading and, under pipefail, the
    # writer's SIGPIPE fails the check
    [ "$(dpkg-deb -c "$(deb python3-s3rdmafs)" |
      grep -c 'usr/lib/python3/dist-packages/s3rdmafs/_s3rdmafs\.cpython-.*\.so$')" \
      -ge 1 ]
}
check "python3-s3rdmafs: the module and its C part" files_py
echo "# built in $((SECONDS - t0)) s"
}
run_case build case_build

# ---- root: a fresh Debian 12 root ----
case_root() {
need_case build
t1=$SECONDS
mkdir -p "$cache"
# (systemd and man-db: what a Debian system has, for systemctl, the unit's
# check and man inside)
# (three tries: a mirror's hiccup is not the packages' fault)
for try in 1 2 3; do
  debootstrap --variant=minbase --include=systemd,man-db \
    --cache-dir="$cache" bookworm "$root" "$mirror" \
    >"$tmp/debootstrap.log" 2>&1 && break
  tail -n 20 "$tmp/debootstrap.log"
  if [ "$try" = 3 ]; then
    echo "not ok - debootstrap bookworm from $mirror"
    exit 1
  fi
  echo "# debootstrap failed (try $try of 3): again in 10 s"
  rm -rf "$root"
  sleep 10
done
echo "# debootstrap: $((SECONDS - t1)) s"
mount -t proc proc "$root/proc"
# (slaves from the start: an unmount in the root never reaches the host's)
mount --rbind --make-rslave /sys "$root/sys"
mount --rbind --make-rslave /dev "$root/dev"
mkdir -p "$root/var/cache/apt/archives"
mkdir -p "$cache/apt"
mount --bind "$cache/apt" "$root/var/cache/apt/archives"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# the host's sources (its updates), so what was built here installs there
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  : >"$root/etc/apt/sources.list"
fi
mkdir -p "$root/tmp/debs"
for p in s3rdmafs s3rdma-gateway libs3rdmafs0 libs3rdmafs-dev python3-s3rdmafs; do
  cp "$(deb $p)" "$root/tmp/debs/"
done
t1=$SECONDS
in_root apt-get update -qq >"$tmp/apt.log" 2>&1 || true
apt_install() {
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends /tmp/debs/s3rdmafs_"$ver"_"$arch".deb \
    /tmp/debs/s3rdma-gateway_"$ver"_"$arch".deb \
    /tmp/debs/libs3rdmafs0_"$ver"_"$arch".deb \
    /tmp/debs/libs3rdmafs-dev_"$ver"_"$arch".deb \
    /tmp/debs/python3-s3rdmafs_"$ver"_"$arch".deb >>"$tmp/apt.log" 2>&1 ||
    { tail -n 20 "$tmp/apt.log"; return 1; }
}
check "apt installs the five packages and their dependencies in the root" apt_install
check "python3 -c 'import s3rdmafs' in the root" \
  in_root python3 -c 'import s3rdmafs; print(s3rdmafs.File)'

echo "# apt: $((SECONDS - t1)) s"
check_eq "the unit is installed disabled" \
  "$(in_root systemctl is-enabled s3rdma-gateway 2>/dev/null || true)" disabled
}
run_case root case_root

# ---- man: man pages and the unit ----
case_man() {
need_case root
man_ok() {
  local p err n=0
  for p in "$root"/usr/share/man/man[1-8]/s3rdma*.[1-8].gz \
           "$root"/usr/share/man/man[1-8]/mount.s3rdmafs.8.gz; do
    [ -f "$p" ] || continue
    n=$((n + 1))
    err=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null) || {
      echo "# man -l $p failed"; return 1; }
    [ -z "$err" ] || { echo "# $p: $err"; return 1; }
  done
  echo "# $n pages rendered"
  [ "$n" -ge 6 ]
}
check "every installed man page renders without a warning" man_ok
# the unit, and a mount unit as docs/install.md shows it
cat >"$root/etc/systemd/system/mnt-data.mount" <<EOF
[Unit]
Description=a bucket at /mnt/data
Wants=network-online.target
After=network-online.target

[Mount]
What=mybucket
Where=/mnt/data
Type=s3rdmafs
Options=_netdev,config=/etc/s3rdmafs.json

[Install]
WantedBy=remote-fs.target
EOF
# (inside the root, where its Documentation= man page and ExecStart are)
verify=$(in_root env SYSTEMD_LOG_COLOR=0 systemd-analyze verify \
  /lib/systemd/system/s3rdma-gateway.service \
  /etc/systemd/system/mnt-data.mount 2>&1) || true
check_eq "systemd-analyze verify: the units, no complaint" "$verify" ""
rm "$root/etc/systemd/system/mnt-data.mount"
}
run_case man case_man

# ---- fstab: fstab mounts from inside ----
case_fstab() {
need_case root
"$CLI" mb "$bucket"
install -m 0600 /dev/null "$root/etc/s3rdmafs.json"
cat >"$root/etc/s3rdmafs.json" <<EOF
{"endpoint": "$S3R_ENDPOINT",
 "credentials": {"access_key": "$AWS_ACCESS_KEY_ID",
                 "secret_key": "$AWS_SECRET_ACCESS_KEY"},
 "cache": {"mlock": false}}
EOF
mkdir -p "$root/mnt/a" "$root/mnt/b" "$root/mnt/c" "$root/mnt/d" "$root/mnt/all"
cat >>"$root/etc/fstab" <<EOF
$bucket /mnt/a s3rdmafs _netdev,config=/etc/s3rdmafs.json 0 0
$bucket /mnt/b fuse.s3rdmafs _netdev,config=/etc/s3rdmafs.json 0 0
all-buckets /mnt/all s3rdmafs _netdev,ro,config=/etc/s3rdmafs.json 0 0
EOF
check "mount -a mounts the three fstab lines" in_root mount -a
fuse_mounts() {
  [ "$(awk -v r="$root" 'index($2, r "/mnt/") == 1 && $3 == "fuse.s3rdmafs"' \
        /proc/self/mounts | wc -l)" = 3 ]
}
check "all three are s3rdmafs mounts" fuse_mounts
check "the all-buckets line shows the bucket as a directory" test -d "$root/mnt/all/$bucket"
gen pk1 $((9 * 1048576 + 77)) >"$tmp/f"
cp "$tmp/f" "$root/tmp/f"
check "a file written through the s3rdmafs line" in_root cp /tmp/f /mnt/a/f
check_eq "read through the fuse.s3rdmafs line" "$(md5 "$root/mnt/b/f")" "$(md5 "$tmp/f")"
cli_lists() {
  in_root AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" \
    AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
    s3rdma-cli --endpoint "$S3R_ENDPOINT" ls "$bucket" >"$tmp/ls.out" &&
    grep -w f "$tmp/ls.out" >/dev/null
}
check "the packaged CLI lists it" cli_lists
prom_inside() {
  in_root s3rdmafs stats --format prometheus /mnt/a >"$tmp/prom.out" &&
    grep '^s3rdmafs_' "$tmp/prom.out" >/dev/null
}
check "s3rdmafs stats --format prometheus inside the root" prom_inside
}
run_case fstab case_fstab

# ---- dev: libs3rdmafs-dev: a program built against the packaged files ----
case_dev() {
need_case fstab
# (compiled on the host, with the root as pkg-config's sysroot: the root
# has no compiler; run inside the root)
pc=$(PKG_CONFIG_PATH='' PKG_CONFIG_LIBDIR="$root/usr/lib/$ma/pkgconfig" \
  PKG_CONFIG_SYSROOT_DIR="$root" pkg-config --cflags --libs s3rdmafs) || pc=""
check "pkg-config finds the packaged s3rdmafs.pc" test -n "$pc"
# shellcheck disable=SC2086 # (pkg-config's words)
check "direct_probe builds against the packaged header and library" \
  cc -o "$root/tmp/direct_probe" "$here/direct_probe.c" $pc
check "libs3rdmafs reads a file of the mount (direct, bounce; gpu: ENODEV)" \
  in_root /tmp/direct_probe /mnt/b/f
}
run_case dev case_dev

# ---- gateway: the packaged gateway, started as its unit starts it ----
case_gateway() {
need_case fstab
# Its ExecStart line with its settings file, under the two restrictions of
# the unit that bear on cma (PID 1 here is not systemd, so the rest of its
# sandbox cannot be applied): no CAP_SYS_PTRACE in the bounding set
# (CapabilityBoundingSet=~CAP_SYS_PTRACE) and no_new_privs
# (NoNewPrivileges=yes). The mount that reads through it runs as root, as
# an fstab mount does. (chroot in the foreground of the background job, so
# that $! is the gateway itself: chroot, env, setpriv and sh all exec.)
gwenv=$root/etc/s3rdma-gateway/gateway.env
sed -i -e "s|^S3RDMA_GATEWAY_OPTS=.*|S3RDMA_GATEWAY_OPTS=\"--listen 127.0.0.1:0 --upstream $S3R_ENDPOINT\"|" \
  -e "s|^AWS_ACCESS_KEY_ID=.*|AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID|" \
  -e "s|^AWS_SECRET_ACCESS_KEY=.*|AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY|" "$gwenv"
exec_start=$(sed -n 's/^ExecStart=//p' "$root/lib/systemd/system/s3rdma-gateway.service")
# start_gw BOUNDING_SET: the gateway in the background (gw_pid; its port in
# gw_port, empty when it did not start)
start_gw() {
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 \
    setpriv --no-new-privs --bounding-set="$1" \
    sh -c "set -a; . /etc/s3rdma-gateway/gateway.env; exec $exec_start" \
    >"$tmp/gw.log" 2>&1 &
  gw_pid=$!
  gw_port=""
  for _ in $(seq 1 100); do
    gw_port=$(sed -n 's/.*listening on .* (port \([0-9]*\)).*/\1/p' "$tmp/gw.log" | head -n 1)
    [ -z "$gw_port" ] || break
    kill -0 "$gw_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$gw_port" ] || cat "$tmp/gw.log"
}
stop_gw() {
  kill "$gw_pid" 2>/dev/null || true
  wait "$gw_pid" 2>/dev/null || true
  gw_pid=""
}
# mount_gw DIR: a root mount through the gateway with rdma.transport=cma
mount_gw() {
  in_root s3rdmafs "$bucket" "$1" -o config=/etc/s3rdmafs.json \
    -o endpoint=http://127.0.0.1:"${gw_port:-1}",rdma.transport=cma,cache.dir=/var/cache/s3rdmafs-"${1##*/}"
}
start_gw -sys_ptrace
check "the packaged gateway starts from its settings file" test -n "$gw_port"
gw_caps() { # the gateway process runs without CAP_SYS_PTRACE, no_new_privs
  local bnd nnp
  bnd=$(awk '/^CapBnd:/ { print $2 }' "/proc/$gw_pid/status")
  nnp=$(awk '/^NoNewPrivs:/ { print $2 }' "/proc/$gw_pid/status")
  grep -q s3rdma-gateway "/proc/$gw_pid/cmdline" &&
    [ $(((0x$bnd >> 19) & 1)) -eq 0 ] && [ "$nnp" = 1 ]
}
check "  ... as itself (pid $gw_pid), without CAP_SYS_PTRACE, no_new_privs" gw_caps
check "a mount through it with rdma.transport=cma" mount_gw /mnt/c
check_eq "read through the gateway" "$(md5 "$root/mnt/c/f" 2>/dev/null)" "$(md5 "$tmp/f")"
rdma_bytes=$(stat_of s3.rdma_bytes "$root/mnt/c" || true)
check "its bytes came by cma (s3.rdma_bytes $rdma_bytes)" in_range "${rdma_bytes:-0}" 1 $((1 << 40))
check "umount of it" in_root umount /mnt/c
stop_gw
# Why the unit keeps root's other capabilities: with the narrower set its
# comment offers for sites without root clients, a root mount's cma reads
# are refused (its helper cannot hold all of a root client's capabilities)
start_gw -all,+setuid,+setgid,+kill,+ipc_lock
narrow_refuses() {
  local out
  mount_gw /mnt/d || return 1
  out=$(in_root cat /mnt/d/f 2>&1 >/dev/null)
  rdma_bytes=$(stat_of s3.rdma_bytes "$root/mnt/d" || true)
  in_root umount /mnt/d
  echo "# the read: ${out:-no error}; s3.rdma_bytes ${rdma_bytes:-?}"
  [ "${rdma_bytes:-0}" = 0 ]
}
check "the narrower capability set serves a root mount no byte by cma" narrow_refuses
stop_gw
}
run_case gateway case_gateway

# ---- out: out again ----
case_out() {
need_case fstab
check "umount of the fstab mounts" in_root umount /mnt/a /mnt/b /mnt/all
apt_purge() {
  in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q s3rdmafs \
    s3rdma-gateway libs3rdmafs0 libs3rdmafs-dev python3-s3rdmafs \
    >>"$tmp/apt.log" 2>&1 ||
    { tail -n 20 "$tmp/apt.log"; return 1; }
}
check "apt purges the packages" apt_purge
check "nothing of them left in /etc" test ! -e "$root/etc/s3rdma-gateway"
echo "# the whole test: $((SECONDS - t0)) s"
}
run_case out case_out

summary
