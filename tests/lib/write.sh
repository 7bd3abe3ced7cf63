# shellcheck shell=bash
# Helpers shared by the write tests (test_fs_write.sh, test_fs_tools.sh),
# sourced after test.sh. Needs: $tmp, $mnt, $bucket, $model, $guard_s,
# $fspid and $mopts set by the script.
# (variables set for, and read from, the sourcing script)
# shellcheck disable=SC2034,SC2154
# mount_fs OPTION...: mount with these options (kept for guard's remount)
mount_fs() {
  mopts=("$@")
  fs_mount "$bucket" "$mnt" "$log" "${mopts[@]}"
  fspid=$FS_PID
}
# guard CMD...: run CMD in a subshell. If it is not done in $guard_s s, say
# so with the kernel stacks of its processes and the daemon's threads, kill
# the daemon (fs_kill: a process waiting on a FUSE flush cannot be
# interrupted otherwise) and mount again, so that the rest of the test
# still runs.
guard() {
  local pid p i
  ("$@") &
  pid=$!
  for ((i = 0; i < guard_s * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; return; }
    sleep 0.1
  done
  echo "# HUNG for $guard_s s: $*"
  for p in $pid $(pgrep -P "$pid") $(for c in $(pgrep -P "$pid"); do pgrep -P "$c"; done); do
    echo "#   pid $p $(cat "/proc/$p/comm" 2>/dev/null): $(tr '\n' ' ' <"/proc/$p/stack" 2>/dev/null)"
  done
  if [ -n "$fspid" ] && [ "$(cat "/proc/$fspid/comm" 2>/dev/null)" = s3rdmafs ]; then
    echo "#   daemon threads wait in:$(for t in /proc/"$fspid"/task/*; do printf ' %s' "$(cat "$t/wchan")"; done 2>/dev/null)"
    tail -n 20 "$log" | sed 's/^/#   log: /'
    fs_kill "$mnt" || true
  fi
  wait "$pid" || true
  fs_umount "$mnt" || true
  mount_fs "${mopts[@]}" || true
  return 1
}
# head_of KEY: one HEAD through awscli; sets H_SIZE H_ETAG H_MODE H_UID H_GID
# H_MTIME (integer part; "None" for metadata not there), H_SIZE=absent when
# there is no such object
head_of() {
  local out
  if ! out=$(aws_ s3api head-object --bucket "$bucket" --key "$1" --query \
      '[ContentLength, ETag, Metadata.mode, Metadata.uid, Metadata.gid, Metadata.mtime]' \
      --output text 2>&1); then
    H_SIZE=absent H_ETAG='' H_MODE='' H_UID='' H_GID='' H_MTIME=''
    echo "# HEAD $1: $(tail -n1 <<<"$out")"
    return 0
  fi
  read -r H_SIZE H_ETAG H_MODE H_UID H_GID H_MTIME <<<"$out"
  H_ETAG=${H_ETAG//\"/}
  H_MTIME=${H_MTIME%%.*}
}
# same_as_model REL: the object REL has the size and md5 of $model/REL
same_as_model() {
  local want got
  want="$(stat -c %s "$model/$1") $(md5 "$model/$1")"
  got="$(aws_ s3api head-object --bucket "$bucket" --key "$1" --query ContentLength \
    --output text 2>/dev/null) $(key_md5 "$1")"
  [ "$want" = "$got" ] || { echo "# $1: want size+md5 $want, got $got"; return 1; }
}
# w_do CMD [ARG]: a command to the writer coprocess W (started by the
# script with writer_py): open PATH for writing
# (O_CREAT|O_TRUNC), write the content of local file ARG, fsync, fchmod
# MODE (decimal), close, quit
writer_py='
import os, sys
fd = -1
for line in sys.stdin:
    cmd, _, arg = line.rstrip("\n").partition(" ")
    try:
        if cmd == "open":
            fd = os.open(arg, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        elif cmd == "write":
            with open(arg, "rb") as f:
                data = memoryview(f.read())
            while data:
                data = data[os.write(fd, data):]
        elif cmd == "fsync":
            os.fsync(fd)
        elif cmd == "fchmod":
            os.fchmod(fd, int(arg))
        elif cmd == "close":
            os.close(fd)
        elif cmd == "quit":
            print("ok")
            break
        print("ok")
    except OSError as e:
        print("error:", e)'
w_do() {
  local r=
  echo "$*" >&"${W[1]}" && read -r -t 120 r <&"${W[0]}" || r="no answer"
  [ "$r" = ok ] || { echo "# writer: $*: $r"; return 1; }
}
