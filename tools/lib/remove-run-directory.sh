# Sourced by tools/test: removes a test run's scratch directory, with whatever a test
# mounted in it and left mounted (a tmpfs or ext4 image of ScratchFilesystem, when the
# run was killed before the test unmounted it), so that the next run is not stopped by
# "Device or resource busy".

# remove_run_directory DIR: unmounts every mount under DIR, deepest first, then removes
# DIR. What cannot be removed is reported, not fatal: a run's leftovers must not fail
# another run.
remove_run_directory() {
  local dir="$1" mountpoint real
  # /proc/self/mounts names mount points by their canonical path (TMPDIR may end in a
  # slash, or go through a symbolic link).
  real="$(realpath -- "$dir" 2>/dev/null || printf '%s' "$dir")"
  if [ -r /proc/self/mounts ]; then
    # /proc/self/mounts' second field is the mount point; our directories hold no spaces.
    awk -v prefix="$real/" 'index($2, prefix) == 1 { print $2 }' /proc/self/mounts | sort -r |
      while read -r mountpoint; do
        umount "$mountpoint" 2>/dev/null || umount -l "$mountpoint" 2>/dev/null \
          || echo "== cannot unmount $mountpoint" >&2
      done
  fi
  rm -rf "$dir" 2>/dev/null || echo "== could not remove all of $dir; going on" >&2
}
