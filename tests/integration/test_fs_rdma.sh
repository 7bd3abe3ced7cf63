#!/usr/bin/env bash
# The RDMA data plane on one host: a mount through s3rdma-gateway (in front
# of RGW) with rdma.transport=cma moves file bytes by cross-memory attach,
# with (near) zero HTTP body bytes, in both directions: a small file (one
# PUT), a streamed multipart file, an overwrite in the middle of an object
# (base fetch + UploadPartCopy), cold reads after a remount. Then the
# fallbacks: RGW directly (it ignores tokens) and a gateway that declines
# every token (501): both still give the right bytes. (Tampered tokens at
# the gateway: test_gw_token.sh.) Exit 77 (skipped) where cma cannot run.
#
#   test_fs_rdma.sh BUILD_BIN_DIR          (under with_rgw.sh)
set -euo pipefail
BIN=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/fs_lib.sh"

tmp=$(mktemp -d)
mnt=$tmp/mnt
log=$tmp/fs.log
bucket=s3r-fsrdma-$$-$RANDOM
mkdir -p "$mnt" "$tmp/local"
. "$here/gw_lib.sh"
trap 'rc=$?; set +e; gw_stop; (exit $rc); fs_cleanup' EXIT

stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$mnt/.s3rdmafs-stats"; }
eq() { [ "$2" = "$3" ] || { echo "# $1: got '$2', want '$3'"; return 1; }; }
le() { [ "$2" -le "$3" ] || { echo "# $1: $2 > $3"; return 1; }; }

"$CLI" mb "$bucket"
head -c 3000 /dev/urandom >"$tmp/local/small"
head -c $((40 * 1048576 + 77)) /dev/urandom >"$tmp/local/big"
head -c $((24 * 1048576)) /dev/urandom >"$tmp/local/base"
"$CLI" --parallel 8 put "$tmp/local/base" "$bucket/base.bin"

# ---- through the gateway with cma ----
gw_start "$tmp/gw"
if ! fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"; then
  if grep -q 'rdma.transport cma' "$log"; then echo "skip: cma cannot run here"; exit 77; fi
  exit 1
fi
check "cma: the transport is up" eq transport "$(stat_of rdma.transport)" cma
check "cma: a small file (one PUT)" cp "$tmp/local/small" "$mnt/small"
check "cma: a 40 MiB file (streamed multipart)" cp "$tmp/local/big" "$mnt/big"
# overwrite 1 MiB in the middle of base.bin: fetches the edges, copies the rest
cp "$tmp/local/base" "$tmp/local/base.new"
head -c 1048576 /dev/urandom >"$tmp/local/patch"
dd if="$tmp/local/patch" of="$tmp/local/base.new" bs=1M seek=10 conv=notrunc status=none
check "cma: overwrite in the middle" dd if="$tmp/local/patch" of="$mnt/base.bin" \
  bs=1M seek=10 conv=notrunc status=none
for f in small big; do
  check "cma: $f on the server" eq "md5 $f" "$(aws_ s3 cp "s3://$bucket/$f" - | md5sum | cut -d' ' -f1)" \
    "$(md5 "$tmp/local/$f")"
done
check "cma: base.bin on the server" eq "md5 base.bin" \
  "$(aws_ s3 cp "s3://$bucket/base.bin" - | md5sum | cut -d' ' -f1)" "$(md5 "$tmp/local/base.new")"
put_rdma=$(stat_of s3.rdma_bytes)
fs_umount "$mnt"

fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"
for f in small big; do
  check "cma: cold read of $f" eq "md5 $f" "$(md5 "$mnt/$f")" "$(md5 "$tmp/local/$f")"
done
check "cma: cold read of base.bin" eq "md5 base.bin" "$(md5 "$mnt/base.bin")" "$(md5 "$tmp/local/base.new")"
check "cma: random preads" python3 "$here/pread_check.py" "$mnt/big" "$tmp/local/big" 200 "$RANDOM"
file_bytes=$((3000 + 40 * 1048576 + 77 + 24 * 1048576))
rdma=$(stat_of s3.rdma_bytes) http_in=$(stat_of s3.bytes_received) http_out=$(stat_of s3.bytes_sent)
echo "# read mount: rdma_bytes $rdma, HTTP bodies received $http_in, sent $http_out; write mount: rdma_bytes $put_rdma"
check "cma: every byte read came by rdma" le "file bytes" "$file_bytes" "$rdma"
# what is left in HTTP bodies is XML (listings): under 1% of the data
check "cma: (near) zero HTTP body bytes" le "HTTP bytes" $((http_in + http_out)) $((file_bytes / 100))
check "cma: writes moved by rdma" le "written bytes" $((3000 + 40 * 1048576 + 77)) "$put_rdma"
check "cma: no token declined, ignored or retired" eq "declined+ignored+retired" \
  "$(($(stat_of s3.rdma_declined) + $(stat_of s3.rdma_ignored) + $(stat_of rdma.retired_chunks)))" 0
check "gateway: bytes moved by rdma both ways" bash -c \
  "[ $(gw_stat rdma_bytes_get) -ge $file_bytes ] && [ $(gw_stat rdma_bytes_put) -gt 0 ]"
fs_umount "$mnt"

gw_stop

# ---- fallback: RGW directly ignores the token ----
fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=cma
check "direct: a new file" cp "$tmp/local/small" "$mnt/small2"
check "direct: it is on the server" eq "md5 small2" \
  "$(aws_ s3 cp "s3://$bucket/small2" - | md5sum | cut -d' ' -f1)" "$(md5 "$tmp/local/small")"
check "direct: reads" eq "md5 big" "$(md5 "$mnt/big")" "$(md5 "$tmp/local/big")"
check "direct: the server was seen to ignore tokens" bash -c "[ $(stat_of s3.rdma_ignored) -ge 1 ]"
check "direct: tokens then stopped" eq active "$(stat_of rdma.active)" 0
check "direct: one log line about it" eq "log lines" "$(grep -c 'ignores x-amz-rdma-token' "$log")" 1
fs_umount "$mnt"

# ---- fallback: a gateway that declines every token (501) ----
gw_start "$tmp/gw" --serve none
fs_mount "$bucket" "$mnt" "$log" -o "endpoint=$GW_ENDPOINT,rdma.transport=cma"
check "declined: a new file (resent over HTTP)" cp "$tmp/local/small" "$mnt/small3"
check "declined: it is on the server" eq "md5 small3" \
  "$(aws_ s3 cp "s3://$bucket/small3" - | md5sum | cut -d' ' -f1)" "$(md5 "$tmp/local/small")"
check "declined: reads (bytes in the body)" eq "md5 big" "$(md5 "$mnt/big")" "$(md5 "$tmp/local/big")"
check "declined: counted" bash -c "[ $(stat_of s3.rdma_declined) -ge 2 ] && [ $(stat_of s3.rdma_resent) -ge 1 ]"
check "declined: no rdma bytes" eq rdma_bytes "$(stat_of s3.rdma_bytes)" 0
fs_umount "$mnt"

# ---- an explicit transport that cannot run here fails the mount clearly ----
rc=0
if [ -d /sys/class/infiniband ]; then
  echo "# an RDMA device is present: the dc refusal is not checked"
else
  timeout 60 "$FS" "$bucket" "$mnt" -f -o rdma.transport=dc >"$tmp/dc.log" 2>&1 || rc=$?
  check "rdma.transport=dc without a device: mount refused" eq rc "$rc" 1
  check "  ... with a reason naming the transport" grep -q 'rdma.transport dc' "$tmp/dc.log"
fi
rc=0
fs_mount "$bucket" "$mnt" "$log" -o rdma.transport=auto
check "rdma.transport=auto: mounts" eq "md5 small" "$(md5 "$mnt/small")" "$(md5 "$tmp/local/small")"
fs_umount "$mnt"

summary
