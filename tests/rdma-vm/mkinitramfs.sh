#!/usr/bin/env bash
# tests/rdma-vm/mkinitramfs.sh - prepare (once, cached) the soft-RoCE guest:
# Debian's own kernel package, extracted, and a busybox initramfs holding
# the modules the guest needs and tests/rdma-vm/guest/init.
#
#   mkinitramfs.sh CACHE_DIR     prints two lines: KERNEL=path INITRD=path
#
# KERNEL is the ELF vmlinux taken out of the bzImage when it has a PVH entry
# point (Debian's has; it boots 5 s faster under TCG), else the bzImage.
# Nothing is installed on the host: the kernel .deb is fetched with
# "apt-get download" (the version linux-image-amd64 depends on) and unpacked
# with "dpkg-deb -x"; modules.dep is generated into the unpacked tree with
# "depmod -b".  The initramfs holds:
#   /bb/busybox (+ applet links)   static busybox (busybox-static)
#   /modules/*.ko, load-{base,rdma}  the modules; the lists, in insmod order
#   /init                          guest/init
#   /bin /sbin /lib /lib64 ...     links into /usr, as on the host, so the
#                                  host's /usr mounted over 9p runs unchanged
# The result is cached under CACHE_DIR, keyed by the kernel version and the
# hash of this script, guest/init and busybox; a lock makes concurrent runs
# safe.  Needs: apt-get, dpkg-deb, kmod, cpio, gzip, xz-utils, binutils
# (readelf), busybox-static.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${1:?usage: mkinitramfs.sh CACHE_DIR}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)

# the modules the guest loads, in this order (dependencies are resolved
# from modules.dep and loaded before each): virtio + net, 9p, overlayfs
# (the build tree, writable in the guest), soft-RoCE
# (crc32_generic: without it "rdma link add" fails), rdma_cm, FUSE
MODS_BASE="virtio_pci virtio_net 9pnet_virtio 9p overlay"
MODS_RDMA="crc32_generic rdma_rxe ib_uverbs rdma_ucm fuse"

BUSYBOX=/bin/busybox
case $("$BUSYBOX" 2>&1 || true) in *BusyBox*) ;; *)
  echo "mkinitramfs: $BUSYBOX missing: apt-get install busybox-static" >&2; exit 1 ;;
esac
if ldd "$BUSYBOX" >/dev/null 2>&1; then
  echo "mkinitramfs: $BUSYBOX is dynamic: install busybox-static" >&2; exit 1
fi
for t in apt-get apt-cache dpkg-deb depmod modprobe cpio gzip xz readelf sha256sum; do
  command -v "$t" >/dev/null || { echo "mkinitramfs: $t missing" >&2; exit 1; }
done

exec 9>"$CACHE/.lock"
flock -w 600 9 || { echo "mkinitramfs: cache lock busy for 600 s" >&2; exit 1; }

# --- the kernel package ----------------------------------------------------
pkg=${S3R_VM_KERNEL_PKG:-$(apt-cache depends linux-image-amd64 2>/dev/null |
  awk '/Depends: linux-image-[0-9]/ {print $2; exit}')}
[ -n "$pkg" ] || { echo "mkinitramfs: no linux-image-amd64 in apt-cache (apt-get update?)" >&2; exit 1; }
kdir=$CACHE/$pkg
if [ ! -e "$kdir/.done" ]; then
  echo "mkinitramfs: fetching and extracting $pkg" >&2
  rm -rf "$kdir" "$kdir.tmp"
  mkdir -p "$kdir.tmp/deb"
  chmod 777 "$kdir.tmp/deb"  # apt-get download drops privileges to _apt
  (cd "$kdir.tmp/deb" && timeout 600 apt-get download -q "$pkg" >/dev/null 2>&1 ||
    { timeout 120 apt-get update -qq && timeout 600 apt-get download -q "$pkg"; } ||
    { sleep 10 && timeout 600 apt-get download -q "$pkg"; }) ||
    { echo "mkinitramfs: apt-get download $pkg failed (three tries)" >&2; exit 1; }
  dpkg-deb -x "$kdir.tmp/deb/"*.deb "$kdir.tmp/x"
  rm -rf "$kdir.tmp/deb"
  kver=$(ls "$kdir.tmp/x/lib/modules")
  depmod -b "$kdir.tmp/x" "$kver"
  mv "$kdir.tmp" "$kdir"
  touch "$kdir/.done"
fi
kver=$(ls "$kdir/x/lib/modules")
kernel=$kdir/x/boot/vmlinuz-$kver
[ -f "$kernel" ] || { echo "mkinitramfs: no $kernel" >&2; exit 1; }
# The bzImage decompresses itself in the guest: about 5 s under TCG.  The
# ELF vmlinux inside it (xz) has a PVH entry point QEMU boots directly.
if [ ! -e "$kdir/vmlinux" ]; then
  off=$(grep -abo $'\xfd7zXZ\x00' "$kernel" | head -1 | cut -d: -f1 || true)
  if [ -n "$off" ] && { tail -c +$((off + 1)) "$kernel" | xz -dc 2>/dev/null > "$kdir/vmlinux.tmp" || true; } &&
    [[ "$(LC_ALL=C readelf -n "$kdir/vmlinux.tmp" 2>/dev/null)" == *'Unknown note type: (0x00000012)'* ]]; then
    mv "$kdir/vmlinux.tmp" "$kdir/vmlinux"
  else
    echo "mkinitramfs: no PVH vmlinux in $kernel: booting the bzImage (slower)" >&2
    rm -f "$kdir/vmlinux.tmp"
  fi
fi
[ -e "$kdir/vmlinux" ] && kernel=$kdir/vmlinux

# --- the initramfs ---------------------------------------------------------
key=$( { echo "$kver"; cat "$0" "$HERE/guest/init"; sha256sum "$BUSYBOX"; } |
  sha256sum | cut -c1-16)
initrd=$CACHE/initrd-$kver-$key.cpio.gz
if [ ! -e "$initrd" ]; then
  echo "mkinitramfs: building $(basename "$initrd")" >&2
  root=$(mktemp -d "$CACHE/root.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$root"/{bb,modules,usr,proc,sys,dev,tmp,run,etc,mnt,host,var/tmp,root}
  cp "$BUSYBOX" "$root/bb/busybox"
  for a in $("$BUSYBOX" --list); do
    [ "$a" = busybox ] || ln -s busybox "$root/bb/$a"
  done
  # merged /usr, as on Debian 12: these resolve once the host /usr is mounted
  for l in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$root/$l"; fi
  done
  list() { # modules... -> their .ko paths, dependencies first, no repeats
    local m
    for m in "$@"; do
      modprobe -d "$kdir/x" -S "$kver" --show-depends "$m" |
        awk '$1 == "insmod" {print $2}' ||
        { echo "mkinitramfs: module $m not found" >&2; return 1; }
    done | awk '!seen[$0]++'
  }
  for set in base rdma; do
    case $set in base) mods=$MODS_BASE ;; rdma) mods=$MODS_RDMA ;; esac
    # shellcheck disable=SC2086 # a list of names
    list $mods | while read -r ko; do
      b=$(basename "$ko")
      [ -e "$root/modules/$b" ] || { cp "$ko" "$root/modules/$b"; echo "$b"; }
    done > "$root/modules/load-$set"
  done
  if [ ! -s "$root/modules/load-base" ] || [ ! -s "$root/modules/load-rdma" ]; then
    echo "mkinitramfs: empty module lists" >&2; exit 1
  fi
  echo "$kver" > "$root/modules/version"
  cp "$HERE/guest/init" "$root/init"
  chmod 755 "$root/init"
  (cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) \
    > "$initrd.tmp"
  mv "$initrd.tmp" "$initrd"
  # keep only the newest initramfs per kernel
  for old in "$CACHE"/initrd-"$kver"-*.cpio.gz; do
    [ "$old" = "$initrd" ] || rm -f "$old"
  done
fi
echo "KERNEL=$kernel"
echo "INITRD=$initrd"
