#!/bin/sh
# A test's wrapper: runs a command where /dev/shm (and, when given, /tmp) is a small tmpfs of its
# own, as in a container (docker's /dev/shm is 64 MiB unless --shm-size says more), inside a
# private mount namespace so that nothing outside sees the mounts. Where that cannot be made (not
# root, no unshare, a container without CAP_SYS_ADMIN) it exits 77: the test is skipped.
# Usage: small_shared_memory.sh SHM_SIZE TMP_SIZE|- COMMAND [ARGS...]
shm_size=$1
tmp_size=$2
shift 2
unshare -m true > /dev/null 2>&1 || { echo "small_shared_memory.sh: no private mount namespace here" >&2; exit 77; }
case "$1" in
  /tmp/*) [ "$tmp_size" = - ] || { echo "small_shared_memory.sh: the program lies under /tmp" >&2; exit 77; } ;;
esac
exec unshare -m sh -c '
  shm_size=$1 tmp_size=$2
  shift 2
  mount -t tmpfs -o "size=$shm_size" tmpfs /dev/shm 2> /dev/null ||
    { echo "small_shared_memory.sh: cannot mount a tmpfs here" >&2; exit 77; }
  if [ "$tmp_size" != - ]; then
    mount -t tmpfs -o "size=$tmp_size" tmpfs /tmp || exit 77
  fi
  exec "$@"' sh "$shm_size" "$tmp_size" "$@"
