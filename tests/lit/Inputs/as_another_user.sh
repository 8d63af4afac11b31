#!/usr/bin/env bash
# Runs its arguments as another user than root (nobody, 65534) when run as root, whom file
# permissions do not stop; as anyone else, as they are. HOME is the current folder's (nobody has none).
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then exec "$@"; fi
exec setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$PWD" "$@"
