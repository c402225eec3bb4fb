#!/usr/bin/env bash
# Installs SimGrid 3.32 (with SMPI: smpicc, smpirun) from Debian's packages.
# libsimgrid-dev ships /usr/bin/smpicc and /usr/bin/smpirun; libsimgrid3.32 is the library.
# Idempotent: does nothing when smpicc and smpirun are already there.
set -euo pipefail
if command -v smpicc >/dev/null 2>&1 && command -v smpirun >/dev/null 2>&1; then
  echo "SimGrid already installed: $(dpkg-query -W -f='${Package} ${Version}\n' libsimgrid-dev 2>/dev/null || echo '?')"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# gcc is needed by smpicc; python3 by the scripts.
$SUDO apt-get install -y -qq libsimgrid-dev gcc python3 >/dev/null
echo "installed: $(dpkg-query -W -f='${Package} ${Version}\n' libsimgrid-dev)"
command -v smpicc smpirun
