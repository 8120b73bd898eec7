#!/bin/sh
# Enters a build pod's container the way a kubelet and the image would, for the
# BuildKit rootless image: run by the build runner under
#   unshare --pid --fork --kill-child --mount-proc --mount --propagation private enter-pod.sh WORKDIR USER -- ARGV...
# so every mount below is private to this process tree and gone when it ends.
# The environment it is started with is the container's; the last line drops
# to USER (a dedicated non-root user with subuid/subgid ranges, the image's
# uid 1000) and execs ARGV with that environment.
#
# WORKDIR holds what the runner prepared:
#   mounts            lines "SOURCE DEST [ro]": the pod's volumes and the
#                     image's files (tools at /usr/local/bin, a CA bundle), bound
#                     in order
#   termination-log   bound at /dev/termination-log
#   tmp/              bound at /tmp (last: WORKDIR may itself be under /tmp)
set -eu
work=$1
user=$2
shift 3
container_path=${PATH-}
PATH=/usr/sbin:/usr/bin:/sbin:/bin

# /dev as a container gets it: a tmpfs with the usual nodes bound from the host,
# and the termination log, so nothing is created in the host's /dev.
dev=$work/dev
mkdir -p "$dev"
mount -t tmpfs -o mode=755,nosuid tmpfs "$dev"
for node in null zero full random urandom tty; do
  touch "$dev/$node"
  mount --bind "/dev/$node" "$dev/$node"
done
mkdir "$dev/pts" "$dev/shm"
mount --rbind /dev/pts "$dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$dev/shm"
ln -s /proc/self/fd "$dev/fd"
ln -s /proc/self/fd/0 "$dev/stdin"
ln -s /proc/self/fd/1 "$dev/stdout"
ln -s /proc/self/fd/2 "$dev/stderr"
touch "$dev/termination-log"
mount --bind "$work/termination-log" "$dev/termination-log"
mount --move "$dev" /dev

# The image's home and runtime dir, owned by the image's user; the host's are hidden.
mount -t tmpfs -o mode=755 tmpfs /home
mkdir -p /home/user /run/user
mount -t tmpfs -o mode=755 tmpfs /run/user
mkdir -p /run/user/1000 /home/user/.local/tmp
chown -R "$user:$user" /home/user /run/user/1000
chmod 700 /run/user/1000

while read -r source dest mode; do
  if [ -d "$source" ]; then mkdir -p "$dest"; else mkdir -p "$(dirname "$dest")" && touch "$dest"; fi
  mount --bind "$source" "$dest"
  if [ "$mode" = ro ]; then mount -o remount,bind,ro "$dest"; fi
done <"$work/mounts"
# Folders the binds above made (as root) under the user's home are the user's, as in the image.
for dir in /home/user/.local /home/user/.local/share /home/user/.config /home/user/.config/buildkit; do
  if [ -d "$dir" ]; then chown "$user:$user" "$dir"; fi
done

mount --bind "$work/tmp" /tmp
cd /home/user
PATH=$container_path
exec /usr/bin/setpriv --reuid="$user" --regid="$user" --init-groups "$@"
