# shellcheck shell=bash
# awscli for the tests (sourced): the second S3 client that checks what the
# mount did. Sourcing this file starts a warm awscli (awsd.py serve) for the
# sourcing script; it ends when that script's shell does.
#
#   aws_ ARG...        aws --endpoint-url $S3R_ENDPOINT ARG...
#   aws_at URL ARG...  aws --endpoint-url URL ARG...
#   "${AWS[@]}" ARG... aws ARG... as a command (for timeout, env, xargs)
#   S3R_AWSD           (exported) the warm awscli's socket, for the Python
#                      helpers' calls (chaos_work.py)
#
# They run through the warm awscli when there is one (a fraction of a second
# a call instead of one to two seconds of Python start-up and imports), or
# run aws itself; either way the call is the same: arguments, environment,
# directory, stdin, stdout, stderr, exit status. S3R_AWS: the aws to run
# (/usr/bin/aws); the warm one is used only when its first line names a
# Python interpreter (it imports that interpreter's awscli).

[ -z "${_aws_sourced:-}" ] || return 0 # (once a shell)
_aws_sourced=1
_aws_bin=${S3R_AWS:-/usr/bin/aws}
AWS=("$_aws_bin")
unset S3R_AWSD # (a parent's: this script's own is set below)

aws_at() {
  local url=$1
  shift
  "${AWS[@]}" --endpoint-url "$url" "$@"
}
aws_() { aws_at "$S3R_ENDPOINT" "$@"; }

# _awsd_start: the interpreter from aws's "#!" line; the server's socket in
# a directory of its own (the server removes both when it ends)
_awsd_start() {
  local awsd line py dir
  awsd=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/awsd.py
  IFS= read -r line <"$_aws_bin" 2>/dev/null || return 0
  read -r py line <<<"${line#\#!}"
  case $py in
    */env) py=$(command -v "${line%% *}") || return 0 ;;
  esac
  case ${py##*/} in python*) ;; *) return 0 ;; esac
  dir=$(mktemp -d /tmp/s3r-awsd.XXXXXX) || return 0
  if "$py" "$awsd" serve "$dir/sock" "$$" 2>/dev/null; then
    AWS=("$py" -I -S "$awsd" call "$dir/sock" "$_aws_bin")
    export S3R_AWSD=$dir/sock
  else
    rmdir "$dir" 2>/dev/null || true
  fi
}
_awsd_start
